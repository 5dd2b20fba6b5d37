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

    Ray 2.x style: leave `space` out and put `tune.uniform/loguniform/randint/choice/randn`
    in the Tuner's `param_space` (converted to HyperOpt's); `metric`/`mode` left out come
    from `TuneConfig`. `n_initial_points` and `gamma` are TPE's settings.
    """

    def __init__(
        self,
        space: dict | None = None,
        max_concurrent: int | None = 10,
        reward_attr: str | None = None,
        metric: str | None = None,
        mode: str | None = None,
        points_to_evaluate: list[dict] | None = None,
        random_state_seed: int | None = None,
        n_initial_points: int = 20,
        gamma: float = 0.25,
        **kwargs,
    ):
        hpo = require("hyperopt", "hyperopt", "HyperOptSearch")
        import functools

        import numpy as np

        self._metric_given = metric is not None or reward_attr is not None
        self._mode_given = mode is not None or reward_attr is not None
        self._metric, mode = resolve_metric(metric, mode or "max", reward_attr)
        self._metric_op = -1.0 if mode == "max" else 1.0
        self.algo = functools.partial(hpo.tpe.suggest, n_startup_jobs=n_initial_points, gamma=gamma)
        self.domain = hpo.base.Domain(lambda spc: spc, space) if space is not None else None
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

    def set_search_properties(self, metric, mode, config=None, **spec) -> bool:
        """TuneConfig's metric/mode (unless given here) and, without a space, param_space's."""
        if metric is not None and not self._metric_given:
            self._metric = metric
        if mode is not None and not self._mode_given:
            self._metric_op = -1.0 if mode == "max" else 1.0
        if self.domain is None and config:
            space = convert_search_space(config, self._hpo)
            if space:
                self.domain = self._hpo.base.Domain(lambda spc: spc, space)
        return True

    def _suggest(self, trial_id: str) -> dict:
        hpo = self._hpo
        if self.domain is None:
            raise TuneError(
                "HyperOptSearch has no search space: pass space={...} (hyperopt hp.* "
                "expressions) or put tune.uniform/choice/... values in the Tuner's param_space"
            )
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


def convert_search_space(config: dict, hpo, prefix: str = "") -> dict:
    """`tune.uniform(...)` & co. in a (nested) config as a HyperOpt space; constants left out."""
    import math

    from ray.tune.sample import Domain

    space = {}
    for key, value in config.items():
        label = f"{prefix}{key}"
        if isinstance(value, dict) and "grid_search" in value:
            raise TuneError(
                f"param_space[{label!r}] is a grid_search: HyperOptSearch cannot search a grid; "
                "use tune.choice([...]) instead"
            )
        if isinstance(value, dict):
            nested = convert_search_space(value, hpo, f"{label}/")
            if nested:
                space[key] = nested
            continue
        if not isinstance(value, Domain):
            continue
        p = value.params
        if value.kind == "uniform":
            space[key] = hpo.hp.uniform(label, p["lower"], p["upper"])
        elif value.kind == "loguniform":
            space[key] = hpo.hp.loguniform(label, math.log(p["lower"]), math.log(p["upper"]))
        elif value.kind == "randint":
            space[key] = hpo.hp.randint(label, p["lower"], p["upper"])
        elif value.kind == "choice":
            space[key] = hpo.hp.choice(label, p["categories"])
        elif value.kind == "randn":
            space[key] = hpo.hp.normal(label, p["mean"], p["sd"])
        else:
            raise TuneError(f"param_space[{label!r}] = {value!r} has no HyperOpt equivalent")
    return space
