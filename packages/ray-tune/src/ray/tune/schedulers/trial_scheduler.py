"""The TrialScheduler interface, and FIFO, the default.

A scheduler is told about trial events and returns decisions (`CONTINUE`, `PAUSE`,
`STOP`) for the trial whose result arrived. It sees read-only trial views; anything it
wants done to *other* trials (stop a paused trial, unpause one, checkpoint or exploit
for PBT) it asks of the `SchedulerContext` it is given, and the controller carries it out.
"""

from __future__ import annotations

from typing import Any, Protocol

from ray.tune.error import TuneError
from ray.tune.result import EPISODE_REWARD_MEAN


class SchedulerContext(Protocol):
    """What the controller offers schedulers (the `trial_runner` argument)."""

    def get_trials(self) -> list: ...

    def has_resources(self, resources) -> bool: ...

    def stop_trial(self, trial) -> None: ...

    def unpause_trial(self, trial) -> None: ...

    def checkpoint_trial(self, trial) -> None: ...

    def set_config(self, trial, config: dict) -> None: ...

    def exploit_trial(self, trial, source, new_config: dict, new_tag: str) -> bool: ...


class TrialScheduler:
    """Interface for trial schedulers (see the module docstring)."""

    CONTINUE = "CONTINUE"  # continue the trial's execution
    PAUSE = "PAUSE"  # checkpoint in memory and release its resources
    STOP = "STOP"  # stop the trial for good

    def on_trial_add(self, trial_runner: SchedulerContext, trial) -> None:
        pass

    def on_trial_error(self, trial_runner: SchedulerContext, trial) -> None:
        pass

    def on_trial_result(self, trial_runner: SchedulerContext, trial, result: dict) -> str:
        return TrialScheduler.CONTINUE

    def on_trial_complete(self, trial_runner: SchedulerContext, trial, result: dict) -> None:
        pass

    def on_trial_remove(self, trial_runner: SchedulerContext, trial) -> None:
        pass

    def choose_trial_to_run(self, trial_runner: SchedulerContext):
        raise NotImplementedError

    def debug_string(self) -> str:
        return ""

    def set_search_properties(self, metric: str | None, mode: str | None) -> None:
        """Takes `tune.run(metric=..., mode=...)` when the scheduler was built without them."""
        if getattr(self, "_metric_given", True):
            if mode is not None and not getattr(self, "_mode_given", True):
                self._metric_op = _metric_op(mode)  # 2.x: metric given here, mode in TuneConfig
            return
        if metric is not None:
            self._metric = metric
        if mode is not None:
            self._metric_op = _metric_op(mode)


class FIFOScheduler(TrialScheduler):
    """Runs trials in submission order: pending ones first, then paused ones."""

    def choose_trial_to_run(self, trial_runner):
        paused = None
        for trial in trial_runner.get_trials():  # one pass: this runs after every event
            status = trial.status
            if status == "PENDING":
                if trial_runner.has_resources(trial.resources):
                    return trial
            elif status == "PAUSED" and paused is None and trial_runner.has_resources(trial.resources):
                paused = trial
        return paused

    def debug_string(self) -> str:
        return "Using FIFO scheduling algorithm."


def _metric_op(mode: str) -> float:
    if mode == "max":
        return 1.0
    if mode == "min":
        return -1.0
    raise TuneError(f"mode must be 'max' or 'min', got {mode!r}")


def init_metric(scheduler: Any, metric: str | None, mode: str, reward_attr: str | None) -> None:
    """Sets `_metric`/`_metric_op`; `reward_attr` is the 0.7 spelling (always maximised)."""
    if reward_attr is not None:
        metric, mode = reward_attr, "max"
    scheduler._metric_given = metric is not None
    scheduler._metric = metric or EPISODE_REWARD_MEAN
    scheduler._metric_op = _metric_op(mode)
    scheduler._mode = mode


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default), q in [0, 100]."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    rank = (len(ordered) - 1) * q / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)
