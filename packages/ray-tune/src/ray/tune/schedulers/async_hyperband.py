"""Asynchronous Successive Halving (ASHA, arXiv:1810.05934).

Each bracket has rungs at `grace_period * reduction_factor**k` time units. A trial
reaching a rung is stopped unless its metric is in the top `1/reduction_factor` of
everything recorded at that rung so far; it never waits for other trials.
"""

from __future__ import annotations

import math
import random

from ray.tune.error import TuneError
from ray.tune.schedulers.trial_scheduler import (
    FIFOScheduler,
    TrialScheduler,
    init_metric,
    percentile,
)


class AsyncHyperBandScheduler(FIFOScheduler):
    """ASHA. With several brackets, a new trial joins one at random (softmax of rung counts)."""

    def __init__(
        self,
        time_attr: str = "training_iteration",
        reward_attr: str | None = None,
        metric: str | None = None,
        mode: str = "max",
        max_t: float = 100,
        grace_period: float = 10,
        reduction_factor: float = 4,
        brackets: int = 1,
        seed: int | None = None,
    ):
        if grace_period <= 0 or max_t <= 0:
            raise TuneError("grace_period and max_t must be positive")
        if grace_period > max_t:
            raise TuneError(f"grace_period ({grace_period}) must be <= max_t ({max_t})")
        if reduction_factor <= 1:
            raise TuneError(f"reduction_factor must be > 1, got {reduction_factor}")
        if brackets < 1:
            raise TuneError(f"brackets must be >= 1, got {brackets}")
        init_metric(self, metric, mode, reward_attr)
        self._time_attr = time_attr
        self._max_t = max_t
        self._reduction_factor = reduction_factor
        self._brackets = [
            _Bracket(grace_period, max_t, reduction_factor, s) for s in range(brackets)
        ]
        self._rng = random.Random(seed)
        self._trial_info: dict[str, _Bracket] = {}
        self._num_stopped = 0

    def on_trial_add(self, trial_runner, trial):
        sizes = [len(b.rungs) for b in self._brackets]
        top = max(sizes)
        weights = [math.exp(s - top) for s in sizes]
        index = self._rng.choices(range(len(self._brackets)), weights=weights)[0]
        self._trial_info[trial.trial_id] = self._brackets[index]

    def on_trial_result(self, trial_runner, trial, result):
        if self._time_attr not in result or self._metric not in result:
            return TrialScheduler.CONTINUE
        if result[self._time_attr] >= self._max_t:
            # 2.x stop_last_trials=False: past max_t, the run's `stop` decides.
            stop = getattr(self, "_stop_last_trials", True)
            action = TrialScheduler.STOP if stop else TrialScheduler.CONTINUE
        else:
            bracket = self._trial_info[trial.trial_id]
            action = bracket.on_result(
                trial.trial_id, result[self._time_attr], self._metric_op * result[self._metric]
            )
        if action == TrialScheduler.STOP:
            self._num_stopped += 1
        return action

    def on_trial_complete(self, trial_runner, trial, result):
        bracket = self._trial_info.pop(trial.trial_id, None)
        if bracket is None or not result:
            return
        if self._time_attr in result and self._metric in result:
            bracket.on_result(
                trial.trial_id, result[self._time_attr], self._metric_op * result[self._metric]
            )

    def on_trial_remove(self, trial_runner, trial):
        self._trial_info.pop(trial.trial_id, None)

    def on_trial_error(self, trial_runner, trial):
        self._trial_info.pop(trial.trial_id, None)

    def debug_string(self) -> str:
        out = f"Using AsyncHyperBand: num_stopped={self._num_stopped}"
        for bracket in self._brackets:
            out += "\n" + bracket.debug_str()
        return out


class ASHAScheduler(AsyncHyperBandScheduler):
    """ASHA with Ray 2.x's signature: (time_attr, metric, mode, max_t, grace_period=1, ...).

    `metric`/`mode` may be left out and come from `TuneConfig(metric=..., mode=...)`.
    """

    def __init__(
        self,
        time_attr: str = "training_iteration",
        metric: str | None = None,
        mode: str | None = None,
        max_t: float = 100,
        grace_period: float = 1,
        reduction_factor: float = 4,
        brackets: int = 1,
        stop_last_trials: bool = True,
        seed: int | None = None,
    ):
        if mode not in (None, "max", "min"):
            raise TuneError(f"ASHAScheduler(mode={mode!r}): mode must be 'max' or 'min'")
        super().__init__(
            time_attr=time_attr, metric=metric, mode=mode or "max", max_t=max_t,
            grace_period=grace_period, reduction_factor=reduction_factor, brackets=brackets,
            seed=seed,
        )
        self._mode_given = mode is not None
        self._stop_last_trials = stop_last_trials


class _Bracket:
    def __init__(self, min_t: float, max_t: float, reduction_factor: float, s: int):
        self.rf = reduction_factor
        max_rungs = int(math.log(max_t / min_t) / math.log(reduction_factor) - s + 1)
        self.rungs: list[tuple[float, dict[str, float]]] = [
            (min_t * reduction_factor ** (k + s), {}) for k in reversed(range(max_rungs))
        ]

    def cutoff(self, recorded: dict[str, float]) -> float | None:
        values = [v for v in recorded.values() if not math.isnan(v)]
        if not values:
            return None
        return percentile(values, (1 - 1 / self.rf) * 100)

    def on_result(self, trial_id: str, cur_iter: float, cur_reward: float) -> str:
        action = TrialScheduler.CONTINUE
        # Rungs are highest first: a trial is judged at the highest rung it has reached.
        for milestone, recorded in self.rungs:
            if cur_iter < milestone or trial_id in recorded:
                continue
            cutoff = self.cutoff(recorded)
            if cutoff is not None and cur_reward < cutoff:
                action = TrialScheduler.STOP
            recorded[trial_id] = cur_reward
            break
        return action

    def debug_str(self) -> str:
        iters = " | ".join(
            f"Iter {milestone:.3f}: {self.cutoff(recorded)}" for milestone, recorded in self.rungs
        )
        return "Bracket: " + iters
