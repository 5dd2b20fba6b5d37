"""The signal classes and streams of the 0.7 Signal API (``ray.experimental.signal``).

Below the runtime: a failing task or actor method appends an ``ErrorSignal`` to its
stream (a GCS list per source: an actor id, or the id of the task behind a ref).
"""

from __future__ import annotations

import cloudpickle

from ray._private.gcs import keys


class Signal:
    """Base class of user signals: subclass it and ``send`` instances."""


class ErrorSignal(Signal):
    """Sent automatically when a task or actor method raises."""

    def __init__(self, error):
        self.error = error

    def get_error(self):
        return self.error


def stream_key(source_hex: str) -> str:
    return keys.kv("signals", source_hex)


def append(gcs, source_hex: str, signal: Signal) -> None:
    gcs.rpush(stream_key(source_hex), cloudpickle.dumps(signal))


__all__ = ["ErrorSignal", "Signal", "append", "stream_key"]
