"""ActorPool: spread work over a fixed set of actors (Ray 2.x ``ray.util.ActorPool``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import ray


class ActorPool:
    """``pool.map(lambda a, v: a.f.remote(v), values)`` and friends."""

    def __init__(self, actors: list):
        self._idle = list(actors)
        self._future_to_actor: dict = {}
        self._index_to_future: dict = {}
        self._next_task_index = 0
        self._next_return_index = 0
        self._pending: list = []

    def map(self, fn: Callable, values: Iterable):
        """Apply ``fn(actor, value)`` to every value; yield results in input order."""
        while self.has_next():  # drain leftovers from earlier submits
            self.get_next_unordered()
        for v in values:
            self.submit(fn, v)
        while self.has_next():
            yield self.get_next()

    def map_unordered(self, fn: Callable, values: Iterable):
        """Like ``map`` but yield results as they finish."""
        while self.has_next():
            self.get_next_unordered()
        for v in values:
            self.submit(fn, v)
        while self.has_next():
            yield self.get_next_unordered()

    def submit(self, fn: Callable, value) -> None:
        if self._idle:
            actor = self._idle.pop()
            future = fn(actor, value)
            self._future_to_actor[future] = (self._next_task_index, actor)
            self._index_to_future[self._next_task_index] = future
            self._next_task_index += 1
        else:
            self._pending.append((fn, value))

    def has_next(self) -> bool:
        return bool(self._future_to_actor)

    def get_next(self, timeout: float | None = None):
        if not self.has_next():
            raise StopIteration("No more results to get")
        # Skip results already taken by get_next_unordered.
        while (self._next_return_index < self._next_task_index
               and self._next_return_index not in self._index_to_future):
            self._next_return_index += 1
        future = self._index_to_future[self._next_return_index]
        if timeout is not None:
            ready, _ = ray.wait([future], timeout=timeout)
            if not ready:
                raise TimeoutError("Timed out waiting for result")
        del self._index_to_future[self._next_return_index]
        self._next_return_index += 1
        _, actor = self._future_to_actor.pop(future)
        self._return_actor(actor)
        return ray.get(future)

    def get_next_unordered(self, timeout: float | None = None):
        if not self.has_next():
            raise StopIteration("No more results to get")
        ready, _ = ray.wait(list(self._future_to_actor), num_returns=1, timeout=timeout)
        if not ready:
            raise TimeoutError("Timed out waiting for result")
        future = ready[0]
        index, actor = self._future_to_actor.pop(future)
        self._index_to_future.pop(index, None)
        self._return_actor(actor)
        return ray.get(future)

    def _return_actor(self, actor) -> None:
        self._idle.append(actor)
        if self._pending:
            fn, value = self._pending.pop(0)
            self.submit(fn, value)

    def has_free(self) -> bool:
        return bool(self._idle) and not self._pending

    def pop_idle(self):
        return self._idle.pop() if self.has_free() else None

    def push(self, actor) -> None:
        busy = {a for _, a in self._future_to_actor.values()}
        if actor in self._idle or actor in busy:
            raise ValueError("Actor already belongs to this pool")
        self._return_actor(actor)
