"""Population Based Bandits (PB2, Parker-Holder et al., 2020), as Ray 2.x's
`ray.tune.schedulers.pb2.PB2`.

PBT's schedule (`perturbation_interval`, quantiles, exploit, `synch`), with the
*explore* step replaced: instead of perturbing the cloned trial's hyperparameters at
random, PB2 fits a time-varying GP to how fast each trial's score improved under its
hyperparameters and picks new ones inside `hyperparam_bounds` by GP-UCB
(`pb2_gp.select_config`). Hyperparameters missing from a trial's config are drawn
uniformly from their bounds when the trial is added. Needs scikit-learn.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable

import numpy as np

from ray.tune.error import TuneError
from ray.tune.schedulers.pbt import PopulationBasedTraining

_MAX_POINTS = 1000  # the GP sees at most the newest 1000 improvements (cost is cubic)

Path = tuple[str, ...]


class PB2(PopulationBasedTraining):
    """See the module docstring. `hyperparam_bounds` maps each key (nested dicts allowed)
    to `[low, high]`; `seed` makes the GP-UCB choices reproducible."""

    def __init__(
        self,
        time_attr: str = "time_total_s",
        metric: str | None = None,
        mode: str | None = None,
        perturbation_interval: float = 60.0,
        hyperparam_bounds: dict | None = None,
        quantile_fraction: float = 0.25,
        log_config: bool = True,
        require_attrs: bool = True,
        synch: bool = False,
        custom_explore_fn: Callable[[dict], dict] | None = None,
        seed: int | None = None,
    ):
        try:
            import sklearn  # noqa: F401
        except ImportError as exc:
            raise TuneError("PB2 needs scikit-learn: pip install scikit-learn") from exc
        if not hyperparam_bounds:
            raise TuneError("PB2 needs hyperparam_bounds, e.g. {'lr': [1e-4, 1e-1]}")
        self._bounds = _flatten_bounds(hyperparam_bounds)
        super().__init__(
            time_attr=time_attr, metric=metric, mode=mode or "max",
            perturbation_interval=perturbation_interval, hyperparam_mutations=hyperparam_bounds,
            quantile_fraction=quantile_fraction, resample_probability=0.0,
            custom_explore_fn=custom_explore_fn, log_config=log_config,
            require_attrs=require_attrs, synch=synch, seed=seed,
        )
        self._mode_given = mode is not None
        self._hyperparam_bounds = hyperparam_bounds
        self._np_rng = np.random.default_rng(seed)
        self._fill_rng = random.Random(seed)
        # (trial_id, time, hyperparameter values, score) at each ranked result.
        self._data: list[tuple[str, float, tuple[float, ...], float]] = []
        self._last_exploration_time = 0.0
        self._current: np.ndarray | None = None  # configs chosen at the current time step

    def on_trial_add(self, trial_runner, trial):
        missing = [path for path in self._bounds if _get(trial.config, path) is None]
        if missing:
            config = copy.deepcopy(trial.config)
            for path in missing:
                low, high = self._bounds[path]
                _set(config, path, self._fill_rng.uniform(low, high))
            trial_runner.set_config(trial, config)
        super().on_trial_add(trial_runner, trial)

    def _record(self, trial, result: dict) -> None:
        values = tuple(float(_get(trial.config, path)) for path in self._bounds)
        score = self._trial_state[trial.trial_id].last_score
        self._data.append((trial.trial_id, float(result[self._time_attr]), values, score))

    def _new_config(self, trial, source) -> dict:
        from ray.tune.schedulers.pb2_gp import select_config

        rows = _improvements(self._data)
        source_rows = [row for row in rows if row[0] == source.trial_id]
        if not source_rows:  # the source has no measured improvement yet: keep its config
            return copy.deepcopy(source.config)
        latest_time = max(row[1] for row in self._data)
        if latest_time > self._last_exploration_time:
            self._current = None  # a new time step: nothing chosen in it yet
        X = np.array([[t, before, *h] for _, t, before, h, _, _ in rows])
        y = np.array([rate for *_, rate, _ in rows])
        _, new_t, new_before, _, _, new_reward = source_rows[-1]
        bounds = np.array(list(self._bounds.values()), dtype=float).T
        chosen = select_config(X, y, self._current, np.array([new_t, new_before]), bounds,
                               rng=self._np_rng)
        config = copy.deepcopy(source.config)
        values = []
        for path, value in zip(self._bounds, chosen):
            typed = type(_get(source.config, path))(value)  # keep ints ints
            _set(config, path, typed)
            values.append(float(typed))
        # The trial continues from the source's state: its next improvement is measured
        # from the source's time and score, under the new hyperparameters.
        self._data.append((trial.trial_id, new_t, tuple(values), new_reward))
        self._current = (np.array([values]) if self._current is None
                         else np.vstack([self._current, values]))
        self._last_exploration_time = max(self._last_exploration_time, latest_time)
        if self._custom_explore_fn is not None:
            config = self._custom_explore_fn(config)
            if not isinstance(config, dict):
                raise TuneError("custom_explore_fn must return the new config dict")
        return config


def _improvements(data):
    """(trial_id, t, score_before, h, rate, score) per pair of consecutive results of a
    trial under unchanged hyperparameters, oldest first, the newest `_MAX_POINTS`."""
    last: dict[tuple, tuple[float, float]] = {}
    rows = []
    for trial_id, t, h, score in sorted(data, key=lambda row: row[1]):
        key = (trial_id, h)
        if key in last:
            t0, score0 = last[key]
            if t > t0:
                rows.append((trial_id, t, score0, h, (score - score0) / (t - t0), score))
        last[key] = (t, score)
    return rows[-_MAX_POINTS:]


def _flatten_bounds(bounds: dict, prefix: Path = ()) -> dict[Path, tuple[float, float]]:
    out: dict[Path, tuple[float, float]] = {}
    for key, value in bounds.items():
        path = prefix + (key,)
        if isinstance(value, dict):
            out.update(_flatten_bounds(value, path))
            continue
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            raise TuneError(f"PB2 hyperparam_bounds[{'/'.join(path)!r}] must be [low, high], got "
                            f"{value!r}")
        low, high = value
        if low > high:
            raise TuneError(f"PB2 hyperparam_bounds[{'/'.join(path)!r}] = {value!r}: low > high")
        out[path] = (float(low), float(high))
    return out


def _get(config: dict, path: Path):
    node = config
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _set(config: dict, path: Path, value) -> None:
    node = config
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
