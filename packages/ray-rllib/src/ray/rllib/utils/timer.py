"""``TimerStat``: the mean duration of an operation over its last few runs (Ray 0.7 API).

Trainers time their phases with it and report ``sample_time_ms``, ``learn_time_ms`` (and
``synch_weights_time_ms``, ``replay_time_ms`` where they apply) under ``result["timers"]``
and, as 0.7 did, in ``result["info"]``::

    timer = TimerStat()
    with timer:
        batch = worker.sample()
    timer.push_units_processed(batch.count)
    timer.mean, timer.mean_throughput
"""

from __future__ import annotations

import collections
import time


class TimerStat:
    def __init__(self, window_size: int = 10):
        self._window_size = window_size
        self._samples: collections.deque = collections.deque(maxlen=window_size)
        self._units: collections.deque = collections.deque(maxlen=window_size)
        self._start: float | None = None
        self.count = 0

    def __enter__(self):
        if self._start is not None:
            raise RuntimeError("TimerStat is not reentrant: time one operation at a time")
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.push(time.perf_counter() - self._start)
        self._start = None

    def push(self, seconds: float) -> None:
        self._samples.append(seconds)
        self.count += 1

    def push_units_processed(self, n: int) -> None:
        self._units.append(n)

    @property
    def mean(self) -> float:
        return sum(self._samples) / len(self._samples) if self._samples else 0.0

    @property
    def mean_units_processed(self) -> float:
        return sum(self._units) / len(self._units) if self._units else 0.0

    @property
    def mean_throughput(self) -> float:
        total = sum(self._samples)
        return sum(self._units) / total if total and self._units else 0.0


def timer_report(timers: dict) -> dict:
    """``{name}_time_ms`` (and ``{name}_throughput``) for the timers that ran."""
    out = {}
    for name, timer in timers.items():
        if timer.count:
            out[f"{name}_time_ms"] = round(1000 * timer.mean, 3)
            if timer.mean_throughput:
                out[f"{name}_throughput"] = round(timer.mean_throughput, 3)
    return out


__all__ = ["TimerStat", "timer_report"]
