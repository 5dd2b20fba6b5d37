"""The owner side of generator tasks: the values they yield, as refs the caller owns.

A streaming task's values arrive one by one (``generator_item`` messages, on the I/O
thread) while its ``ObjectRefGenerator`` hands them out in order to the caller's
thread; the task's ``TaskDone`` (possibly before its last values, which travel on
another connection) says how many there were. A dynamic task's values come inside its
``TaskDone``; its one return becomes a ``DynamicObjectRefGenerator`` of their refs.
An error the task raised after ``k`` values becomes the ``k``-th value. A retried
attempt yields the same values again: those already here are kept.

Backpressure (``_generator_backpressure_num_objects``): the worker pauses while that many
of its values are not taken; each take is sent back to it (``generator_consumed``, the
count taken so far), and so is the count already taken when a (retried) attempt's first
value arrives; a dropped generator frees the worker for good.
"""

from __future__ import annotations

import logging
import threading
import time

from ray._private.messages import (
    NUM_RETURNS_DYNAMIC,
    GeneratorItem,
    Inline,
    ObjectValue,
    ReturnObject,
    item_id,
)
from ray._private.object_ref import ObjectRef
from ray._private.ref_generators import DynamicObjectRefGenerator
from ray._private.rpc import RpcPeer
from ray._private.runtime import serialization as ser
from ray._private.runtime.objects import ObjectClient
from ray._private.runtime.reference_counter import ReferenceCounter
from ray.exceptions import GetTimeoutError, RayConnectionError

logger = logging.getLogger(__name__)

_MAX_RELEASED_REMEMBERED = 10_000
# What a dropped generator tells a paused worker it consumed: it never pauses again.
_ALL_CONSUMED = 1 << 62


class _Stream:
    __slots__ = ("items", "arrived", "taken", "total", "backpressure", "worker")

    def __init__(self, backpressure: int = 0):
        self.items: dict[int, ObjectRef] = {}  # index -> ref (held until handed out)
        self.arrived = 0  # 1 + the highest index that arrived (handed out or not)
        self.taken = 0  # how many the caller took
        self.total: int | None = None  # known once the task ended
        self.backpressure = backpressure  # 0: the worker never waits for takes
        self.worker: RpcPeer | None = None  # the attempt sending values (backpressure)


class GeneratorStreams:
    def __init__(self, objects: ObjectClient, refs: ReferenceCounter):
        self._objects = objects
        self._refs = refs
        self._streams: dict[bytes, _Stream] = {}
        # Streams the caller dropped (the oldest forgotten): values still arriving for
        # them are freed, not kept.
        self._released: dict[bytes, None] = {}
        self._cond = threading.Condition()

    # -- owner bookkeeping --------------------------------------------------------------
    def open(self, task_id: bytes, backpressure: int = 0) -> None:
        """A streaming task was submitted (its first values may have come already: an
        actor call's id is known only once it is sent); ``backpressure``: its worker
        pauses while that many values are not taken (0: never)."""
        with self._cond:
            self._streams.setdefault(task_id, _Stream(backpressure))

    @staticmethod
    def _tell_consumed(worker: RpcPeer, task_id: bytes, taken: int) -> None:
        try:
            worker.notify("generator_consumed", task_id, taken)
        except RayConnectionError as exc:  # the attempt is gone; a retry is told anew
            logger.debug("generator %s: its worker left (%s)", task_id.hex(), exc)

    def _own(self, object_id: bytes, value: ObjectValue) -> ObjectRef:
        self._refs.add_owned(object_id)
        self._objects.store_value(object_id, value)
        return ObjectRef(object_id, None)

    def item_arrived(self, peer: RpcPeer, wire: list) -> None:
        """``generator_item`` from the worker running a streaming task (I/O thread)."""
        item = GeneratorItem.from_wire(wire)
        with self._cond:
            stream = self._stream(item.task_id)
            if stream is None:  # the caller dropped its generator
                if type(item.value.value) is not Inline:
                    self._own(item.value.object_id, item.value.value)  # freed at once
                return
            tell = stream.backpressure and stream.worker is not peer
            if tell:  # a new attempt: it learns how many were taken already
                stream.worker = peer
                taken = stream.taken
            if item.index not in stream.items and item.index >= stream.taken:
                # (else sent again by a retried attempt: the first copy stands)
                stream.arrived = max(stream.arrived, item.index + 1)
                stream.items[item.index] = self._own(item.value.object_id, item.value.value)
                self._cond.notify_all()
        if tell:
            self._tell_consumed(peer, item.task_id, taken)

    def completed(self, task_id: bytes, num_returns: int, returns: list[ReturnObject],
                  items: int | None) -> list[ReturnObject]:
        """A generator task ended; the returns to store for its one ref."""
        main = returns[0]
        failed = type(main.value) is Inline and ser.is_error(main.value.metadata)
        count = items or 0
        if num_returns == NUM_RETURNS_DYNAMIC:
            refs = [self._own(r.object_id, r.value) for r in returns[1:]]
            if failed:  # the raised error is the value after the last one
                refs.append(self._own(item_id(task_id, len(refs)), main.value))
            small = ser.serialize(DynamicObjectRefGenerator(refs))[0]
            self._refs.mark_escaped([r.binary() for r in refs])  # held by the value
            return [ReturnObject(main.object_id, Inline(small.metadata, small.to_bytes()))]
        with self._cond:
            stream = self._stream(task_id)
            if stream is not None:
                if failed:
                    stream.items.setdefault(count, self._own(item_id(task_id, count),
                                                             main.value))
                    count += 1
                stream.total = count
                self._cond.notify_all()
        return [main]

    def _stream(self, task_id: bytes) -> _Stream | None:
        """The task's stream; made here if its first news came before ``open`` (an actor
        call's id is known to the caller only once it was sent); None once released."""
        stream = self._streams.get(task_id)
        if stream is None and task_id not in self._released:
            stream = self._streams[task_id] = _Stream()
        return stream

    def failed(self, task_id: bytes, error_value: Inline) -> None:
        """The task could not run to the end (its worker died, it was cancelled): the
        error follows the values that arrived."""
        with self._cond:
            stream = self._stream(task_id)
            if stream is None or stream.total is not None:
                return
            count = stream.arrived
            stream.items[count] = self._own(item_id(task_id, count), error_value)
            stream.total = count + 1
            self._cond.notify_all()

    # -- the caller's ObjectRefGenerator ------------------------------------------------
    def next_item(self, task_id: bytes, index: int, timeout_s: float | None) -> ObjectRef:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._cond:
            while True:
                stream = self._streams.get(task_id)
                if stream is None:
                    raise StopIteration
                ref = stream.items.pop(index, None)
                if ref is not None:
                    stream.taken = max(stream.taken, index + 1)
                    worker = stream.worker if stream.backpressure else None
                    taken = stream.taken
                    break
                if stream.total is not None and index >= stream.total:
                    self._streams.pop(task_id, None)
                    raise StopIteration
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise GetTimeoutError(
                        f"The generator task {task_id.hex()} yielded no value {index} "
                        f"within {timeout_s} s.")
                self._cond.wait(left)
        if worker is not None:
            self._tell_consumed(worker, task_id, taken)
        return ref

    def item_ready(self, task_id: bytes, index: int) -> bool:
        with self._cond:
            stream = self._streams.get(task_id)
            return stream is None or index in stream.items or (
                stream.total is not None and index >= stream.total)

    def exhausted(self, task_id: bytes, index: int) -> bool:
        with self._cond:
            stream = self._streams.get(task_id)
            return stream is None or (stream.total is not None and index >= stream.total)

    def release(self, task_id: bytes) -> None:
        """The caller dropped its generator: values not handed out are freed."""
        with self._cond:
            stream = self._streams.pop(task_id, None)
            self._released[task_id] = None
            while len(self._released) > _MAX_RELEASED_REMEMBERED:
                del self._released[next(iter(self._released))]
        if stream is not None:
            stream.items.clear()  # (their refs go: the owner frees the values)
            if stream.backpressure and stream.worker is not None and stream.total is None:
                self._tell_consumed(stream.worker, task_id, _ALL_CONSUMED)


__all__ = ["GeneratorStreams"]
