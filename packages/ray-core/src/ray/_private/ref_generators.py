"""What a generator task hands its caller (Ray 2.x): refs to the values it yields.

* ``ObjectRefGenerator`` (``num_returns="streaming"``, the default for generator
  functions and methods): iterate it (``for ref in gen``, ``next(gen)``, ``async for``)
  to get each yielded value's ref as soon as the task yields it. It stays in the
  caller's process: passing it to a task or ``ray.put`` raises ``TypeError``.
* ``DynamicObjectRefGenerator`` (``num_returns="dynamic"``): what ``ray.get`` of the
  task's one ref returns once the task finished: the list of refs it yielded. It can be
  passed to tasks like any value holding refs.

A value the task raised after yielding ``k`` values is the ``k``-th ref's error.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ray._private.object_ref import ObjectRef


class ObjectRefGenerator:
    """Refs to a streaming generator task's values, in order, as they are produced."""

    # (No __dict__: a failed pickle names the generator itself, not its runtime.)
    __slots__ = ("_generator_ref", "_task_id", "_runtime", "_index", "_released",
                 "__weakref__")

    def __init__(self, generator_ref: ObjectRef, runtime: Any):
        self._generator_ref = generator_ref  # the task's own return: done, or its error
        self._task_id = generator_ref.task_id()
        self._runtime = runtime  # the runtime that submitted the task (it holds the stream)
        self._index = 0
        self._released = False

    def __iter__(self) -> ObjectRefGenerator:
        return self

    def __next__(self) -> ObjectRef:
        return self._next_sync()

    def _next_sync(self, timeout_s: float | None = None) -> ObjectRef:
        """The next value's ref; ``StopIteration`` after the last one; ``GetTimeoutError``
        when none arrives within ``timeout_s``."""
        if self._released:
            raise StopIteration
        ref = self._runtime.next_generator_item(self._task_id, self._index, timeout_s)
        self._index += 1
        return ref

    def __aiter__(self) -> ObjectRefGenerator:
        return self

    async def __anext__(self) -> ObjectRef:
        ref = await asyncio.get_running_loop().run_in_executor(None, self._next_or_none)
        if ref is None:
            raise StopAsyncIteration
        return ref

    def _next_or_none(self) -> ObjectRef | None:
        # (StopIteration cannot cross a Future: the end travels as None.)
        try:
            return self._next_sync()
        except StopIteration:
            return None

    def completed(self) -> ObjectRef:
        """A ref that is ready once the task finished (its error if it raised)."""
        return self._generator_ref

    def is_finished(self) -> bool:
        """Whether every value was taken and the task ended."""
        return self._runtime.generator_exhausted(self._task_id, self._index)

    def next_ready(self) -> bool:
        """Whether ``next()`` would return without waiting."""
        return self._runtime.generator_item_ready(self._task_id, self._index)

    def task_id(self) -> bytes:
        return self._task_id

    def __reduce__(self):
        raise TypeError(
            "You cannot return or pass a generator to other task. Serializing a "
            "ObjectRefGenerator is not allowed: iterate it here and pass the refs (or use "
            "num_returns='dynamic', whose DynamicObjectRefGenerator can be passed).")

    def __del__(self):
        if not self._released:
            self._released = True
            runtime = self._runtime
            if runtime is not None:  # (only queues work: never blocks or raises)
                runtime.release_generator(self._task_id)

    def __repr__(self) -> str:
        return f"ObjectRefGenerator({self._task_id.hex()})"


class DynamicObjectRefGenerator:
    """The refs a ``num_returns="dynamic"`` task yielded (``ray.get`` of its ref)."""

    def __init__(self, refs: list[ObjectRef]):
        self._refs = list(refs)

    def __iter__(self):
        return iter(self._refs)

    def __len__(self) -> int:
        return len(self._refs)

    def __reduce__(self):
        return DynamicObjectRefGenerator, (self._refs,)

    def __repr__(self) -> str:
        return f"DynamicObjectRefGenerator({len(self._refs)} refs)"


__all__ = ["DynamicObjectRefGenerator", "ObjectRefGenerator"]
