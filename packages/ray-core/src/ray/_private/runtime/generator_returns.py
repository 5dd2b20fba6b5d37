"""The worker side of a generator task (``num_returns="streaming"`` or ``"dynamic"``):
each yielded value is stored as it comes; a streaming task's go to its owner at once as
``GeneratorItem``s (with backpressure the task then pauses while that many are not
taken), a dynamic one's ride in its ``TaskDone`` after the task's own return. The owner
side is ``generator_streams``."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Protocol

from ray._private.messages import (
    NUM_RETURNS_STREAMING,
    GeneratorItem,
    ReturnObject,
    TaskSpec,
    item_id,
)
from ray._private.runtime.objects import ObjectClient


class TaskFlow(Protocol):
    """What a generator needs of the executor running it: cancellation and backpressure."""

    def check_cancelled(self, task_id: bytes) -> None: ...

    def track_consumed(self, task_id: bytes, running: bool) -> None: ...

    def wait_consumed(self, task_id: bytes, generated: int, limit: int) -> None: ...


class GeneratorReturns:
    """The values a streaming or dynamic generator task yields, stored as they come: a
    streaming task's go to its owner at once (``generator_item``), a dynamic one's ride
    in its ``TaskDone`` after the task's own return."""

    def __init__(self, flow: TaskFlow, objects: ObjectClient,
                 notify_owner: Callable[[Any, str, Any], None], spec: TaskSpec, name: str):
        self._flow = flow
        self._objects = objects
        self._notify_owner = notify_owner
        self._spec = spec
        self._name = name
        self._streaming = spec.num_returns == NUM_RETURNS_STREAMING
        self._backpressure = spec.generator_backpressure if self._streaming else 0
        self.items: list[ReturnObject] = []
        self.count = 0

    def add(self, value: Any) -> None:
        spec = self._spec
        self._flow.check_cancelled(spec.task_id)
        stored = self._objects.store_return(item_id(spec.task_id, self.count), value)
        if self._streaming:
            self._notify_owner(spec.owner, "generator_item",
                               GeneratorItem(spec.task_id, self.count, stored).to_wire())
        else:
            self.items.append(stored)
        self.count += 1
        if self._backpressure:  # the generator is not resumed until its caller catches up
            self._flow.wait_consumed(spec.task_id, self.count, self._backpressure)

    def drain(self, values: Any) -> BaseException | None:
        """Store every value of a sync generator; the error it raised, if any."""
        if not inspect.isgenerator(values):
            return TypeError(
                f"{self._name} was called with num_returns='streaming'/'dynamic' but returned "
                f"a {type(values).__name__}, not a generator: use yield, or a fixed "
                "num_returns.")
        if self._backpressure:
            self._flow.track_consumed(self._spec.task_id, True)
        try:
            for value in values:
                self.add(value)
        except Exception as exc:  # noqa: BLE001 - the task's error, after its values
            return exc
        finally:
            if self._backpressure:
                self._flow.track_consumed(self._spec.task_id, False)
        return None

    async def drain_async(self, values: Any) -> BaseException | None:
        """The same for an async generator (an async actor's method)."""
        try:
            async for value in values:
                self.add(value)
        except Exception as exc:  # noqa: BLE001 - the task's error, after its values
            return exc
        return None

    def returns(self) -> list[ReturnObject]:
        """The task's own return (None; the owner makes it a DynamicObjectRefGenerator
        for a dynamic task), then a dynamic task's values."""
        own = self._objects.store_return(self._spec.return_ids()[0], None)
        return [own, *self.items]


__all__ = ["GeneratorReturns", "TaskFlow"]
