"""0.7 Signal API: tasks and actors send signals; anyone holding the source receives them.

A signal stream per source (an actor, or the task behind an ObjectRef) lives in
the GCS; each receiving process keeps its own cursor per source, so every
receiver gets its own copies and the first ``receive`` returns all past signals.
A failing task or actor method appends an ``ErrorSignal`` to its stream.
"""

from __future__ import annotations

import time

import cloudpickle

from ray._private import runtime as _runtime
from ray._private.object_ref import ObjectRef
from ray._private.signals import ErrorSignal, Signal, append, stream_key
from ray.actor import ActorHandle

_cursors: dict[str, int] = {}


def _current_source(rt) -> str:
    who = rt.identity()
    if who.actor_id is not None:
        return who.actor_id
    # Outside a task (a driver) nobody can name the source: it is this process.
    return who.task_id or who.worker_id


def send(signal: Signal) -> None:
    """Send ``signal`` from the current task or actor."""
    if not isinstance(signal, Signal):
        raise TypeError(f"send() needs a ray.experimental.signal.Signal, got {type(signal)}")
    rt = _runtime.current()
    append(rt.gcs_client(), _current_source(rt), signal)


def _source_hex(source) -> str:
    if isinstance(source, ActorHandle):
        return source._actor_id.hex()
    if isinstance(source, ObjectRef):
        return source.binary()[:16].hex()
    raise TypeError(f"A signal source is an ObjectRef or an actor handle, got {type(source)}")


def receive(sources, timeout: float | None = None) -> list:
    """All signals from ``sources`` since this process last received from them."""
    rt = _runtime.current()
    deadline = None if timeout is None else time.monotonic() + timeout
    pairs = [(s, _source_hex(s)) for s in sources]
    while True:
        out = []
        for source, hex_id in pairs:
            start = _cursors.get(hex_id, 0)
            entries = rt.gcs_client().lrange(stream_key(hex_id), start, -1)
            if entries:
                _cursors[hex_id] = start + len(entries)
                out.extend((source, cloudpickle.loads(e)) for e in entries)
        if out or (deadline is not None and time.monotonic() >= deadline):
            return out
        time.sleep(0.01)


def forget(sources) -> None:
    """Skip every signal sent so far by ``sources``."""
    rt = _runtime.current()
    for source in sources:
        hex_id = _source_hex(source)
        _cursors[hex_id] = len(rt.gcs_client().lrange(stream_key(hex_id), 0, -1))


def reset() -> None:
    """Start every source again from its first signal."""
    _cursors.clear()


__all__ = ["ErrorSignal", "Signal", "forget", "receive", "reset", "send"]
