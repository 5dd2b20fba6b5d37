"""Median stopping rule (Golovin et al., Google Vizier, 2017).

Stop a trial if its best result by time t is strictly worse than the median of the
running averages of the completed trials' results up to t.
"""

from __future__ import annotations

import collections
import logging
import statistics

from ray.tune.schedulers.trial_scheduler import FIFOScheduler, TrialScheduler, init_metric

logger = logging.getLogger(__name__)


class MedianStoppingRule(FIFOScheduler):
    """See the module docstring. `hard_stop=False` pauses instead and resumes those trials last."""

    def __init__(
        self,
        time_attr: str = "time_total_s",
        reward_attr: str | None = None,
        metric: str | None = None,
        mode: str = "max",
        grace_period: float = 60.0,
        min_samples_required: int = 3,
        hard_stop: bool = True,
        verbose: bool = True,
    ):
        init_metric(self, metric, mode, reward_attr)
        self._time_attr = time_attr
        self._grace_period = grace_period
        self._min_samples_required = min_samples_required
        self._hard_stop = hard_stop
        self._verbose = verbose
        self._stopped_trials: set[str] = set()
        self._completed_trials: set[str] = set()
        self._results: dict[str, list[tuple[float, float]]] = collections.defaultdict(list)

    def on_trial_result(self, trial_runner, trial, result):
        if self._time_attr not in result or self._metric not in result:
            return TrialScheduler.CONTINUE
        if trial.trial_id in self._stopped_trials:
            return TrialScheduler.CONTINUE  # a paused-then-resumed trial runs to completion
        now = result[self._time_attr]
        self._results[trial.trial_id].append((now, self._metric_op * result[self._metric]))
        median = self._median_result(now)
        best = max(score for _, score in self._results[trial.trial_id])
        if self._verbose:
            logger.info("Trial %s: best %s, median %s at t=%s", trial, best, median, now)
        if best < median and now > self._grace_period:
            self._stopped_trials.add(trial.trial_id)
            return TrialScheduler.STOP if self._hard_stop else TrialScheduler.PAUSE
        return TrialScheduler.CONTINUE

    def on_trial_complete(self, trial_runner, trial, result):
        if result and self._time_attr in result and self._metric in result:
            self._results[trial.trial_id].append(
                (result[self._time_attr], self._metric_op * result[self._metric])
            )
        self._completed_trials.add(trial.trial_id)

    def on_trial_remove(self, trial_runner, trial):
        if trial.status == "PAUSED":
            self._completed_trials.add(trial.trial_id)

    def choose_trial_to_run(self, trial_runner):
        trials = trial_runner.get_trials()
        for trial in trials:
            if trial.status == "PENDING" and trial_runner.has_resources(trial.resources):
                return trial
        for trial in trials:
            if (
                trial.status == "PAUSED"
                and trial.trial_id not in self._stopped_trials
                and trial_runner.has_resources(trial.resources)
            ):
                return trial
        # Trials paused by the rule resume only once nothing else is left to run.
        if any(t.status in ("PENDING", "RUNNING") for t in trials):
            return None
        for trial in trials:
            if trial.status == "PAUSED" and trial_runner.has_resources(trial.resources):
                return trial
        return None

    def _median_result(self, now: float) -> float:
        scores = [self._running_result(tid, now) for tid in self._completed_trials]
        scores = [s for s in scores if s is not None]
        if len(scores) >= self._min_samples_required:
            return statistics.median(scores)
        return float("-inf")

    def _running_result(self, trial_id: str, t_max: float) -> float | None:
        values = [score for t, score in self._results[trial_id] if t <= t_max]
        return statistics.fmean(values) if values else None

    def debug_string(self) -> str:
        return (
            f"Using MedianStoppingRule: num_stopped={len(self._stopped_trials)}, "
            f"completed={len(self._completed_trials)}."
        )
