"""ActorPool: spread work over a fixed set of actors (Ray 2.x ``ray.util.ActorPool``).

    pool = ActorPool([Worker.remote() for _ in range(4)])
    list(pool.map(lambda actor, v: actor.double.remote(v), [1, 2, 3]))   # [2, 4, 6]

``fn(actor, value)`` must call one method of ``actor`` and return its ObjectRef (or
the list of refs of a ``num_returns > 1`` method); the actor counts as busy until
that call finishes. ``map``/``map_unordered`` submit every value when called (values
beyond the free actors wait in the pool) and return an iterator over the results.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import ray

_TIMEOUT_MSG = "Timed out waiting for result"


class ActorPool:
    """A fixed set of actors that work is handed to as they become free."""

    def __init__(self, actors: list):
        self._idle_actors = list(actors)
        # A submitted call is keyed by its ref (a tuple of refs for num_returns > 1).
        self._future_to_actor: dict[Any, tuple[int, Any]] = {}
        self._index_to_future: dict[int, Any] = {}
        self._next_task_index = 0
        self._next_return_index = 0
        self._pending_submits: list[tuple[Callable, Any]] = []

    # -- bulk ------------------------------------------------------------------------------
    def map(self, fn: Callable, values: Iterable) -> Iterator:
        """Submit ``fn(actor, v)`` for every value now; iterate results in input order.

        Results of earlier ``submit`` calls that were not collected are dropped first.
        """
        self._drop_uncollected(ordered=True)
        for v in values:
            self.submit(fn, v)
        return self._results(self.get_next)

    def map_unordered(self, fn: Callable, values: Iterable) -> Iterator:
        """Like :meth:`map`, but iterate results as they finish."""
        self._drop_uncollected(ordered=False)
        for v in values:
            self.submit(fn, v)
        return self._results(self.get_next_unordered)

    def _results(self, take: Callable[[], Any]) -> Iterator:
        while self.has_next():
            yield take()

    def _drop_uncollected(self, ordered: bool) -> None:
        take = self.get_next if ordered else self.get_next_unordered
        while self.has_next():
            try:
                take(timeout=0, ignore_if_timedout=True)
            except TimeoutError:
                pass  # that call was dropped; its actor is free for the new work

    # -- one at a time -----------------------------------------------------------------------
    def submit(self, fn: Callable, value) -> None:
        """Run ``fn(actor, value)`` on a free actor, or queue it until one is free."""
        if not self._idle_actors:
            self._pending_submits.append((fn, value))
            return
        actor = self._idle_actors.pop()
        future = fn(actor, value)
        self._future_to_actor[_key(future)] = (self._next_task_index, actor)
        self._index_to_future[self._next_task_index] = future
        self._next_task_index += 1

    def has_next(self) -> bool:
        """Whether any submitted result has not been returned yet."""
        return bool(self._future_to_actor)

    def get_next(self, timeout: float | None = None, ignore_if_timedout: bool = False):
        """Return the next result in submission order, waiting up to ``timeout`` s.

        Raises ``TimeoutError`` when it is not ready in time; with
        ``ignore_if_timedout`` that call is also dropped from the pool.
        """
        if not self.has_next():
            raise StopIteration("No more results to get")
        if self._next_return_index >= self._next_task_index:
            raise ValueError("It is not allowed to call get_next() after "
                             "get_next_unordered().")
        future = self._index_to_future[self._next_return_index]
        timed_out = timeout is not None and not _ready(future, timeout)
        if timed_out and not ignore_if_timedout:
            raise TimeoutError(_TIMEOUT_MSG)
        del self._index_to_future[self._next_return_index]
        self._next_return_index += 1
        _, actor = self._future_to_actor.pop(_key(future))
        self._return_actor(actor)
        if timed_out:
            raise TimeoutError(f"{_TIMEOUT_MSG}. The task {future} has been ignored.")
        return ray.get(future)

    def get_next_unordered(self, timeout: float | None = None,
                           ignore_if_timedout: bool = False):
        """Return whichever result finishes first, waiting up to ``timeout`` s.

        Raises ``TimeoutError`` when none is ready in time; with ``ignore_if_timedout``
        the oldest outstanding call is also dropped from the pool.
        """
        if not self.has_next():
            raise StopIteration("No more results to get")
        key = self._first_ready(timeout)
        timed_out = key is None
        if timed_out:
            if not ignore_if_timedout:
                raise TimeoutError(_TIMEOUT_MSG)
            key = _key(self._index_to_future[min(self._index_to_future)])
        index, actor = self._future_to_actor.pop(key)
        future = self._index_to_future.pop(index)
        self._next_return_index = max(self._next_return_index, index + 1)
        self._return_actor(actor)
        if timed_out:
            raise TimeoutError(f"{_TIMEOUT_MSG}. The task {future} has been ignored.")
        return ray.get(future)

    def _first_ready(self, timeout: float | None):
        """The key of the oldest finished call (a multi-return call is finished when
        all its refs are), or None if none finishes within ``timeout`` s."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            refs = [ref for key in self._future_to_actor for ref in _refs(key)]
            ready, pending = ray.wait(refs, num_returns=len(refs), timeout=0)
            done = set(ready)
            for key in self._future_to_actor:
                if all(ref in done for ref in _refs(key)):
                    return key
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return None
            newly_ready, _ = ray.wait(pending, num_returns=1, timeout=left)
            if not newly_ready:
                return None

    # -- membership ---------------------------------------------------------------------------
    def _return_actor(self, actor) -> None:
        self._idle_actors.append(actor)
        if self._pending_submits:
            self.submit(*self._pending_submits.pop(0))

    def has_free(self) -> bool:
        """Whether an actor is idle and no submitted value is waiting for one."""
        return bool(self._idle_actors) and not self._pending_submits

    def pop_idle(self):
        """Remove and return an idle actor, or None if none is free."""
        return self._idle_actors.pop() if self.has_free() else None

    def push(self, actor) -> None:
        """Add ``actor`` to the pool (it takes a waiting submission at once, if any)."""
        busy = [a for _, a in self._future_to_actor.values()]
        if actor in self._idle_actors or actor in busy:
            raise ValueError("Actor already belongs to current ActorPool")
        self._return_actor(actor)


def _key(future):
    return tuple(future) if isinstance(future, list) else future


def _refs(key) -> tuple:
    return key if isinstance(key, tuple) else (key,)


def _ready(future, timeout: float) -> bool:
    refs = list(_refs(_key(future)))
    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=timeout)
    return len(ready) == len(refs)


__all__ = ["ActorPool"]
