"""The console status table printed during `tune.run` (quiet with verbose=0)."""

from __future__ import annotations

import collections
import sys
from typing import TextIO

from ray.tune import result as R
from ray.tune.trial import Trial

MAX_LINES_PER_STATUS = 20


def trial_progress_str(trial: Trial) -> str:
    """`name: RUNNING [pid=6778], 209 s, 20604 ts, 7.29 acc` (the Ray 0.7 status line)."""
    result = trial.last_result
    info = f"{trial}: {trial.status}"
    if trial.status == Trial.ERROR and trial.error_msg:
        info += ", " + trial.error_msg.splitlines()[0][:120]
    if not result:
        return info
    pieces = []
    if R.PID in result:
        info += f" [pid={result[R.PID]}]"
    if result.get(R.TIME_TOTAL_S) is not None:
        pieces.append(f"{result[R.TIME_TOTAL_S]:.3g} s")
    if result.get(R.TRAINING_ITERATION) is not None:
        pieces.append(f"{result[R.TRAINING_ITERATION]} iter")
    if result.get(R.TIMESTEPS_TOTAL) is not None:
        pieces.append(f"{result[R.TIMESTEPS_TOTAL]} ts")
    if result.get(R.EPISODE_REWARD_MEAN) is not None:
        pieces.append(f"{result[R.EPISODE_REWARD_MEAN]:.3g} rew")
    if result.get(R.MEAN_LOSS) is not None:
        pieces.append(f"{result[R.MEAN_LOSS]:.3g} loss")
    if result.get(R.MEAN_ACCURACY) is not None:
        pieces.append(f"{result[R.MEAN_ACCURACY]:.3g} acc")
    return info + (", " + ", ".join(pieces) if pieces else "")


def status_string(
    trials: list[Trial], *, scheduler_debug: str, resources_summary: str, logdir: str,
    best_metric: str | None = None, mode: str = "max",
) -> str:
    lines = ["== Status =="]
    if scheduler_debug:
        lines.append(scheduler_debug)
    lines.append(f"Resources requested: {resources_summary}")
    memory = _memory_line()
    if memory:
        lines.append(memory)
    lines.append(f"Result logdir: {logdir}")
    counts = collections.Counter(t.status for t in trials)
    lines.append(f"Number of trials: {len(trials)} ({dict(sorted(counts.items()))})")
    best = _best_trial(trials, best_metric, mode)
    if best is not None:
        lines.append(f"Current best trial: {best} with {best_metric}={best.last_result[best_metric]}")
    by_status: dict[str, list[Trial]] = collections.defaultdict(list)
    for trial in trials:
        by_status[trial.status].append(trial)
    shown = 0
    for status in Trial.STATUSES:
        group = by_status.get(status, [])
        if not group:
            continue
        lines.append(f"{status} trials:")
        visible = group[: max(0, MAX_LINES_PER_STATUS - shown)]
        lines.extend(" - " + trial_progress_str(t) for t in visible)
        shown += len(visible)
        if len(group) > len(visible):
            lines.append(f"  ... {len(group) - len(visible)} more not shown")
    return "\n".join(lines) + "\n"


def _memory_line() -> str:
    try:
        import psutil
    except ImportError:
        return ""
    mem = psutil.virtual_memory()
    used_gb = (mem.total - mem.available) / 1e9
    return f"Memory usage on this node: {used_gb:.1f}/{mem.total / 1e9:.1f} GB"


def _best_trial(trials: list[Trial], metric: str | None, mode: str) -> Trial | None:
    if not metric:
        return None
    scored = [t for t in trials if metric in t.last_result]
    if not scored:
        return None
    sign = 1 if mode == "max" else -1
    return max(scored, key=lambda t: sign * t.last_result[metric])


class ProgressReporter:
    """Prints the status table at most every `interval_s` (and once at the end)."""

    def __init__(self, verbose: int, *, interval_s: float = 5.0, out: TextIO | None = None):
        self.verbose = verbose
        self.interval_s = interval_s
        self.out = out or sys.stdout
        self._last = -float("inf")

    def report(self, now_s: float, render, *, force: bool = False) -> None:
        if self.verbose < 1:
            return
        if not force and now_s - self._last < self.interval_s:
            return
        self._last = now_s
        self.out.write(render())
        self.out.flush()

    def on_result(self, trial: Trial, result: dict) -> None:
        if self.verbose >= 2:
            self.out.write(f"Result for {trial}: {trial_progress_str(trial)}\n")
