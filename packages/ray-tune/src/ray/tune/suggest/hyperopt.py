"""HyperOptSearch: Tree-structured Parzen Estimators through HyperOpt (`pip install hyperopt`)."""

from __future__ import annotations

import copy

from ray.tune.error import TuneError
from ray.tune.suggest._optional import require
from ray.tune.suggest.search import resolve_metric
from ray.tune.suggest.suggestion import SuggestionAlgorithm


class HyperOptSearch(SuggestionAlgorithm):
    """TPE over a HyperOpt space (`{"lr": hp.loguniform("lr", -10, -1)}`).

    `points_to_evaluate` (a list of configs; `hp.choice` values given by index) are
    tried first. HyperOpt minimises, so `mode="max"` negates the metric.
    """

    def __init__(
        self,
        space: dict,
        max_concurrent: int | None = 10,
        reward_attr: str | None = None,
        metric: str | None = "episode_reward_mean",
        mode: str = "max",
        points_to_evaluate: list[dict] | None = None,
        random_state_seed: int | None = None,
        **kwargs,
    ):
        hpo = require("hyperopt", "hyperopt", "HyperOptSearch")
        import numpy as np

        self._metric, mode = resolve_metric(metric, mode, reward_attr)
        self._metric_op = -1.0 if mode == "max" else 1.0
        self.algo = hpo.tpe.suggest
        self.domain = hpo.base.Domain(lambda spc: spc, space)
        self._hpo = hpo
        if points_to_evaluate:
            from hyperopt.fmin import generate_trials_to_calculate

            self._hpopt_trials = generate_trials_to_calculate(list(points_to_evaluate))
            self._hpopt_trials.refresh()
            self._points_to_evaluate = list(range(len(points_to_evaluate)))
        else:
            self._hpopt_trials = hpo.Trials()
            self._points_to_evaluate = []
        self._live_trial_mapping: dict[str, tuple[int, dict]] = {}
        self.rstate = np.random.RandomState(random_state_seed)
        super().__init__(max_concurrent=max_concurrent, **kwargs)

    def _suggest(self, trial_id: str) -> dict:
        hpo = self._hpo
        if self._points_to_evaluate:
            new_trial = self._hpopt_trials.trials[self._points_to_evaluate.pop(0)]
        else:
            new_ids = self._hpopt_trials.new_trial_ids(1)
            self._hpopt_trials.refresh()
            new_trials = self.algo(
                new_ids, self.domain, self._hpopt_trials, self.rstate.randint(2**31 - 1)
            )
            self._hpopt_trials.insert_trial_docs(new_trials)
            self._hpopt_trials.refresh()
            new_trial = new_trials[0]
        self._live_trial_mapping[trial_id] = (new_trial["tid"], new_trial)
        # As in hyperopt.base.Domain.evaluate: turn the trial's `misc` into a config.
        config = hpo.base.spec_from_misc(new_trial["misc"])
        ctrl = hpo.base.Ctrl(self._hpopt_trials, current_trial=new_trial)
        memo = self.domain.memo_from_config(config)
        hpo.utils.use_obj_for_literal_in_memo(self.domain.expr, ctrl, hpo.base.Ctrl, memo)
        suggested = hpo.pyll.rec_eval(
            self.domain.expr, memo=memo, print_node_on_error=self.domain.rec_eval_print_node_on_error
        )
        return copy.deepcopy(suggested)

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        trial = self._get_hyperopt_trial(trial_id)
        if trial is not None:
            now = self._hpo.utils.coarse_utcnow()
            trial["book_time"] = now
            trial["refresh_time"] = now

    def _on_trial_complete(self, trial_id, result=None, error=False, early_terminated=False):
        hpo = self._hpo
        trial = self._get_hyperopt_trial(trial_id)
        if trial is None:
            return
        trial["refresh_time"] = hpo.utils.coarse_utcnow()
        if error or not result or self._metric not in result:
            trial["state"] = hpo.base.JOB_STATE_ERROR
            trial["misc"]["error"] = (str(TuneError), "Tune Error")
        else:
            # An early-stopped trial still tells TPE how good its config looked.
            trial["state"] = hpo.base.JOB_STATE_DONE
            trial["result"] = {"loss": self._metric_op * result[self._metric], "status": "ok"}
        self._hpopt_trials.refresh()
        del self._live_trial_mapping[trial_id]

    def _get_hyperopt_trial(self, trial_id: str):
        if trial_id not in self._live_trial_mapping:
            return None
        tid = self._live_trial_mapping[trial_id][0]
        for trial in self._hpopt_trials.trials:
            if trial["tid"] == tid:
                return trial
        return None
