"""This process's timeline events: spans recorded in a bounded buffer, flushed to the
GCS on a helper thread (see ``ray._private.profiling``), with its task events
(``ray._private.task_events``: the state transitions the state API lists)."""

from __future__ import annotations

import time

from ray._private import profiling
from ray._private.task_events import NoTaskEvents, TaskEventRecorder


class Profiler:
    def __init__(self, gcs, *, enabled: bool, capacity: int, flush_period_s: float,
                 node_ip: str, component: str,
                 task_events: TaskEventRecorder | None = None):
        self._gcs = gcs
        self.task_events = NoTaskEvents() if task_events is None else task_events  # same flusher
        self.enabled = enabled
        self._events = profiling.EventBuffer(capacity)
        self._node_ip = node_ip
        self._component = component
        self._flusher = profiling.PeriodicFlusher(flush_period_s, self.flush)

    def span(self, event_type: str, name: str, extra=None):
        """A context manager recording one timeline span (a no-op with profiling off)."""
        if not self.enabled:
            return profiling.NO_SPAN
        return profiling.Span(self._events, event_type, name, extra)

    def events(self) -> profiling.EventBuffer | None:
        """The event buffer, or None with profiling off (for per-task hot paths)."""
        return self._events if self.enabled else None

    def submit_stamp(self) -> float | None:
        """A new task spec's ``submitted_at``: where the timeline's scheduling phase starts."""
        return time.time() if self.enabled else None

    def flush(self) -> None:
        profiling.flush(self._gcs, self._events, self._node_ip, self._component)
        self.task_events.flush(self._gcs)

    def stop(self) -> None:
        self._flusher.stop()


__all__ = ["Profiler"]
