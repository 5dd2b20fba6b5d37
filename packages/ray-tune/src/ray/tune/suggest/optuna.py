"""OptunaSearch: Optuna's samplers (TPE, CMA-ES, random, NSGA-II, ...) as a Tune searcher.

    from ray.tune.search.optuna import OptunaSearch
    searcher = OptunaSearch(metric="loss", mode="min", sampler=optuna.samplers.TPESampler(seed=0))
    tune.Tuner(objective, param_space={"x": tune.uniform(-10, 10)},
               tune_config=tune.TuneConfig(search_alg=searcher, num_samples=50)).fit()

The space is one of (as in Ray): Tune's domains in `param_space` (or `space=`; nested
dicts flatten to `a/b` parameter names), a dict of Optuna distributions, or a
define-by-run function `space(optuna_trial) -> dict | None` (it calls
`trial.suggest_*`; a returned dict adds constants). Each Tune trial is one
`study.ask()`; its final result is `study.tell()` (errors as FAIL), intermediate results
are `trial.report(value, step)` for single objectives. `points_to_evaluate` are enqueued
(`study.enqueue_trial`) and tried first; `evaluated_rewards` adds them as finished trials
instead. Multi-objective: `metric=["a", "b"]`, `mode=["min", "max"]`.
"""

from __future__ import annotations

import copy
import logging
import math
from collections.abc import Callable
from typing import Any

from ray.tune import result as R
from ray.tune.error import TuneError
from ray.tune.search.searcher import Searcher
from ray.tune.suggest._optional import require, to_builtin

logger = logging.getLogger(__name__)


class OptunaSearch(Searcher):
    """See the module docstring."""

    def __init__(
        self,
        space: dict | list | Callable | None = None,
        metric: str | list[str] | None = None,
        mode: str | list[str] | None = None,
        points_to_evaluate: list[dict] | None = None,
        sampler: Any = None,
        seed: int | None = None,
        evaluated_rewards: list | None = None,
    ):
        ot = require("optuna", "optuna", "OptunaSearch")
        self._ot = ot
        multi = isinstance(metric, (list, tuple)) or isinstance(mode, (list, tuple))
        if multi:
            metric = list(metric) if metric is not None else None
            mode = list(mode) if mode is not None else None
            if metric is not None and mode is not None and len(metric) != len(mode):
                raise TuneError(
                    f"OptunaSearch: metric {metric} and mode {mode} must have the same length"
                )
            for m in mode or []:
                if m not in ("min", "max"):
                    raise TuneError(f"OptunaSearch(mode={mode!r}): each mode must be 'min' or 'max'")
            super().__init__(metric=None, mode=None)
            self._metric, self._mode = metric, mode
        else:
            super().__init__(metric=metric, mode=mode)
        if sampler is not None and seed is not None:
            raise TuneError(
                "OptunaSearch: give either sampler= or seed=, not both (seed only seeds the "
                "default TPESampler; seed your own sampler yourself)"
            )
        if sampler is not None and not isinstance(sampler, ot.samplers.BaseSampler):
            raise TuneError(
                f"OptunaSearch(sampler=...) must be an optuna.samplers.BaseSampler, got {sampler!r}"
            )
        if evaluated_rewards is not None and not points_to_evaluate:
            raise TuneError("OptunaSearch(evaluated_rewards=...) needs points_to_evaluate")
        if evaluated_rewards is not None and len(evaluated_rewards) != len(points_to_evaluate):
            raise TuneError(
                "OptunaSearch: evaluated_rewards must have one value per point of points_to_evaluate"
            )
        self._sampler = sampler if sampler is not None else ot.samplers.TPESampler(seed=seed)
        self._points_to_evaluate = [copy.deepcopy(p) for p in points_to_evaluate or []]
        self._evaluated_rewards = list(evaluated_rewards) if evaluated_rewards is not None else None
        self._space: dict | Callable | None = None
        if space is not None:
            self._space = self._convert_space(space)
        self._study = None
        self._ot_trials: dict[str, Any] = {}
        if self._space is not None and self._metric is not None and self._mode is not None:
            self._setup_study()

    # -- set up ----------------------------------------------------------------------
    @property
    def _multi(self) -> bool:
        return isinstance(self._metric, list)

    def _convert_space(self, space: Any) -> dict | Callable:
        ot = self._ot
        if callable(space) and not isinstance(space, dict):
            return space
        if isinstance(space, list):  # Ray 1.x: a list of (name, distribution) pairs
            return dict(space)
        if not isinstance(space, dict):
            raise TuneError(
                f"OptunaSearch(space=...) must be a dict, a list of (name, distribution) or a "
                f"define-by-run function, got {type(space).__name__}"
            )
        flat = _flatten(space)
        if all(isinstance(v, ot.distributions.BaseDistribution) for v in flat.values()):
            return flat
        return convert_search_space(space, ot)

    def set_search_properties(self, metric, mode, config=None, **spec) -> bool:
        if self._study is not None:
            return False
        if self._metric is None and metric is not None:
            self._metric = metric
        if self._mode is None and mode is not None:
            self._mode = mode
        if self._space is None and config:
            space = convert_search_space(config, self._ot)
            if space:
                self._space = space
        if self._space is not None and self._metric is not None and self._mode is not None:
            self._setup_study()
        return True

    def _setup_study(self) -> None:
        ot = self._ot
        modes = self._mode if isinstance(self._mode, list) else [self._mode]
        if self._multi and not isinstance(self._mode, list):
            modes = [self._mode] * len(self._metric)
        directions = ["minimize" if m == "min" else "maximize" for m in modes]
        if not self._multi:
            self._study = ot.create_study(sampler=self._sampler, direction=directions[0])
        else:
            self._study = ot.create_study(sampler=self._sampler, directions=directions)
        if self._evaluated_rewards is not None:
            if callable(self._space):
                raise TuneError(
                    "OptunaSearch: evaluated_rewards cannot be used with a define-by-run space "
                    "(Optuna needs the distributions); use points_to_evaluate alone"
                )
            for point, reward in zip(self._points_to_evaluate, self._evaluated_rewards):
                params = _flatten(point)
                dists = {k: v for k, v in self._space.items() if k in params}
                values = list(reward) if self._multi else None
                self._study.add_trial(ot.trial.create_trial(
                    params=params, distributions=dists,
                    value=None if self._multi else reward, values=values))
            self._points_to_evaluate = []
        for point in self._points_to_evaluate:
            self._study.enqueue_trial(_flatten(point))
        self._points_to_evaluate = []

    # -- search ------------------------------------------------------------------------
    def suggest(self, trial_id: str) -> dict | None:
        if self._space is None:
            raise TuneError(
                "OptunaSearch has no search space: pass space= or put tune.uniform/choice/... "
                "values in the Tuner's param_space"
            )
        if self._metric is None or self._mode is None:
            raise TuneError(
                "OptunaSearch needs a metric and a mode: pass them here or in "
                "TuneConfig(metric=..., mode=...)"
            )
        if self._study is None:
            self._setup_study()
        if callable(self._space):
            ot_trial = self._study.ask()
            constants = self._space(ot_trial)
            params = dict(ot_trial.params)
            if constants is not None:
                if not isinstance(constants, dict):
                    raise TuneError(
                        "a define-by-run space must return None or a dict of constants, got "
                        f"{type(constants).__name__}"
                    )
                params.update(_flatten(constants))
        else:
            ot_trial = self._study.ask(fixed_distributions=self._space)
            params = dict(ot_trial.params)
        self._ot_trials[trial_id] = ot_trial
        return _unflatten({k: to_builtin(v) for k, v in params.items()})

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        if self._multi or trial_id not in self._ot_trials or self._metric not in result:
            return
        step = result.get(R.TRAINING_ITERATION)
        if step is None:
            return
        try:
            self._ot_trials[trial_id].report(float(result[self._metric]), int(step))
        except (NotImplementedError, RuntimeError, ValueError):
            pass  # samplers/trials that do not take intermediate values (or a repeated step)

    def _on_trial_complete(self, trial_id, result=None, error=False, early_terminated=False):
        ot_trial = self._ot_trials.pop(trial_id, None)
        if ot_trial is None:
            return
        state = self._ot.trial.TrialState
        if error or not result:
            self._study.tell(ot_trial, state=state.FAIL)
            return
        metrics = self._metric if self._multi else [self._metric]
        missing = [m for m in metrics if m not in result]
        if missing:
            logger.warning("OptunaSearch: trial %s did not report %s; told Optuna it failed",
                           trial_id, missing)
            self._study.tell(ot_trial, state=state.FAIL)
            return
        values = [float(result[m]) for m in metrics]
        if any(math.isnan(v) for v in values):
            self._study.tell(ot_trial, state=state.FAIL)
            return
        self._study.tell(ot_trial, values if self._multi else values[0])

    def add_evaluated_point(self, parameters: dict, value, error: bool = False,
                            pruned: bool = False, intermediate_values: list | None = None) -> None:
        """Tells Optuna about a configuration evaluated outside Tune (Ray 2.x)."""
        ot = self._ot
        if self._study is None or callable(self._space):
            raise TuneError(
                "add_evaluated_point needs a dict search space and metric/mode set up first"
            )
        params = _flatten(parameters)
        dists = {k: v for k, v in self._space.items() if k in params}
        state = ot.trial.TrialState
        trial_state = state.FAIL if error else state.PRUNED if pruned else state.COMPLETE
        intermediate = dict(enumerate(intermediate_values)) if intermediate_values else None
        multi = self._multi
        self._study.add_trial(ot.trial.create_trial(
            params=params, distributions=dists, state=trial_state,
            value=None if (multi or error) else value,
            values=list(value) if (multi and not error) else None,
            intermediate_values=intermediate))

    # -- persistence -----------------------------------------------------------------------
    def save_state(self):
        return {"study": self._study, "ot_trials": self._ot_trials, "space": self._space,
                "metric": self._metric, "mode": self._mode, "finished": self._finished,
                "points": self._points_to_evaluate}

    def restore_state(self, state) -> None:
        self._study = state["study"]
        self._ot_trials = state["ot_trials"]
        self._space = state["space"]
        self._metric = state["metric"]
        self._mode = state["mode"]
        self._finished = state["finished"]
        self._points_to_evaluate = state["points"]
        self._live_trial_ids = set()

    def save(self, checkpoint_path: str) -> None:
        import cloudpickle

        with open(checkpoint_path, "wb") as f:
            cloudpickle.dump(self.save_state(), f)

    def restore(self, checkpoint_path: str) -> None:
        import cloudpickle

        with open(checkpoint_path, "rb") as f:
            self.restore_state(cloudpickle.load(f))


def convert_search_space(config: dict, ot, prefix: str = "") -> dict:
    """Tune domains in a (nested) config as {"a/b": optuna distribution}; constants left out."""
    from ray.tune.sample import Domain, sample_from

    out = {}
    dist = ot.distributions
    for key, value in config.items():
        label = f"{prefix}{key}"
        if isinstance(value, dict) and "grid_search" in value:
            raise TuneError(
                f"param_space[{label!r}] is a grid_search: OptunaSearch cannot search a grid; use "
                "tune.choice([...]) instead"
            )
        if isinstance(value, dict):
            out.update(convert_search_space(value, ot, f"{label}/"))
            continue
        if not isinstance(value, Domain):
            if isinstance(value, sample_from):
                raise TuneError(
                    f"param_space[{label!r}] is a sample_from function: OptunaSearch needs a "
                    "domain it can model (tune.uniform, loguniform, randint, choice, ...)"
                )
            continue
        p = value.params
        q = p.get("q")
        if value.kind == "uniform":
            out[label] = dist.FloatDistribution(p["lower"], p["upper"], step=q)
        elif value.kind == "loguniform":
            if q is not None:
                raise TuneError(f"param_space[{label!r}]: Optuna has no quantized log-uniform")
            out[label] = dist.FloatDistribution(p["lower"], p["upper"], log=True)
        elif value.kind == "randint":
            out[label] = dist.IntDistribution(p["lower"], p["upper"] - 1, step=q or 1)
        elif value.kind == "lograndint":
            if q is not None:
                raise TuneError(f"param_space[{label!r}]: Optuna has no quantized log-int")
            out[label] = dist.IntDistribution(p["lower"], p["upper"] - 1, log=True)
        elif value.kind == "choice":
            out[label] = dist.CategoricalDistribution(p["categories"])
        else:
            raise TuneError(
                f"param_space[{label!r}] = {value!r} has no Optuna equivalent (Optuna has no "
                "normal distribution); use tune.uniform/loguniform/randint/choice"
            )
    return out


def _flatten(config: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in config.items():
        if isinstance(value, dict):
            out.update(_flatten(value, f"{prefix}{key}/"))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _unflatten(flat: dict) -> dict:
    out: dict = {}
    for key, value in flat.items():
        node = out
        parts = key.split("/")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return out
