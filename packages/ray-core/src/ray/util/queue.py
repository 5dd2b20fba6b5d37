"""A first-in, first-out queue shared by tasks and actors (Ray 2.x ``ray.util.queue``).

    from ray.util.queue import Queue, Empty, Full

    q = Queue(maxsize=100)
    consumer.remote(q)                 # pass the queue to tasks and actors
    q.put(item)                        # blocks while full (timeout= raises Full)
    q.get(timeout=1)                   # blocks while empty (timeout= raises Empty)
    q.put_nowait_batch([1, 2, 3]); q.get_nowait_batch(3)
    await q.put_async(item); await q.get_async()

The items live in one async actor (``actor_options`` are its ``.options()``), so
every process holding the queue sees the same items; blocked gets and puts wait
inside the actor without holding up other calls.
"""

from __future__ import annotations

import asyncio
import queue
from collections.abc import Iterable
from typing import Any

import ray


class Empty(queue.Empty):
    """``get`` found the queue empty (or stayed empty until its timeout)."""


class Full(queue.Full):
    """``put`` found the queue full (or stayed full until its timeout)."""


class _QueueActor:
    """Holds the items; async so that waiting gets and puts do not block others."""

    def __init__(self, maxsize: int):
        self.maxsize = maxsize
        self.queue: asyncio.Queue = asyncio.Queue(maxsize)

    def qsize(self) -> int:
        return self.queue.qsize()

    def empty(self) -> bool:
        return self.queue.empty()

    def full(self) -> bool:
        return self.queue.full()

    async def put(self, item, timeout: float | None = None) -> None:
        try:
            await asyncio.wait_for(self.queue.put(item), timeout)
        except TimeoutError:
            raise Full(f"the queue stayed full (maxsize {self.maxsize}) for "
                       f"{timeout} s") from None

    async def get(self, timeout: float | None = None):
        try:
            return await asyncio.wait_for(self.queue.get(), timeout)
        except TimeoutError:
            raise Empty(f"the queue stayed empty for {timeout} s") from None

    def put_nowait(self, item) -> None:
        try:
            self.queue.put_nowait(item)
        except asyncio.QueueFull:
            raise Full(f"the queue is full (maxsize {self.maxsize})") from None

    def put_nowait_batch(self, items: list) -> None:
        if self.maxsize > 0 and len(items) + self.qsize() > self.maxsize:
            raise Full(f"Cannot add {len(items)} items to queue of size {self.qsize()} "
                       f"and maxsize {self.maxsize}.")
        for item in items:
            self.queue.put_nowait(item)

    def get_nowait(self):
        try:
            return self.queue.get_nowait()
        except asyncio.QueueEmpty:
            raise Empty("the queue is empty") from None

    def get_nowait_batch(self, num_items: int) -> list:
        if num_items > self.qsize():
            raise Empty(f"Cannot get {num_items} items from queue of size {self.qsize()}.")
        return [self.queue.get_nowait() for _ in range(num_items)]


_remote_queue_actor = None


def _queue_actor_class():
    global _remote_queue_actor
    if _remote_queue_actor is None:
        _remote_queue_actor = ray.remote(_QueueActor)
    return _remote_queue_actor


class Queue:
    """A FIFO queue on ray, with sync and async ``put``/``get``, batches and timeouts.

    Args:
        maxsize: the most items the queue holds; 0 (the default) means unbounded.
        actor_options: ``.options()`` of the actor holding the items (e.g.
            ``{"num_cpus": 1}`` or a scheduling strategy); it needs no CPU by default.
    """

    def __init__(self, maxsize: int = 0, actor_options: dict | None = None) -> None:
        if not isinstance(maxsize, int) or isinstance(maxsize, bool) or maxsize < 0:
            raise ValueError(f"maxsize must be an int >= 0 (0: unbounded), got {maxsize!r}")
        if actor_options is not None and not isinstance(actor_options, dict):
            raise TypeError("actor_options must be a dict of actor options such as "
                            f"{{'num_cpus': 1}}, got {type(actor_options).__name__}")
        self.maxsize = maxsize
        options = {"num_cpus": 0, **(actor_options or {})}
        self.actor = _queue_actor_class().options(**options).remote(maxsize)

    # -- size -------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.size()

    def size(self) -> int:
        """The number of items in the queue."""
        return ray.get(self._live_actor().qsize.remote())

    def qsize(self) -> int:
        """The number of items in the queue."""
        return self.size()

    def empty(self) -> bool:
        return ray.get(self._live_actor().empty.remote())

    def full(self) -> bool:
        return ray.get(self._live_actor().full.remote())

    # -- put ----------------------------------------------------------------------------
    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        """Add ``item``; while the queue is full, wait (up to ``timeout`` s) if
        ``block``, else raise :class:`Full` at once."""
        ray.get(self._put_ref(item, block, timeout))

    async def put_async(self, item: Any, block: bool = True,
                        timeout: float | None = None) -> None:
        """``put`` for asyncio code: awaits instead of blocking the event loop."""
        await self._put_ref(item, block, timeout)

    def put_nowait(self, item: Any) -> None:
        """``put(item, block=False)``: raises :class:`Full` if the queue is full."""
        self.put(item, block=False)

    def put_nowait_batch(self, items: Iterable) -> None:
        """Add all ``items`` in order, or none of them (:class:`Full`) if they do not fit."""
        if not isinstance(items, Iterable):
            raise TypeError("Argument 'items' must be an Iterable")
        ray.get(self._live_actor().put_nowait_batch.remote(list(items)))

    # -- get ----------------------------------------------------------------------------
    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        """Remove and return the oldest item; while the queue is empty, wait (up to
        ``timeout`` s) if ``block``, else raise :class:`Empty` at once."""
        return ray.get(self._get_ref(block, timeout))

    async def get_async(self, block: bool = True, timeout: float | None = None) -> Any:
        """``get`` for asyncio code: awaits instead of blocking the event loop."""
        return await self._get_ref(block, timeout)

    def get_nowait(self) -> Any:
        """``get(block=False)``: raises :class:`Empty` if the queue is empty."""
        return self.get(block=False)

    def get_nowait_batch(self, num_items: int) -> list:
        """Remove and return ``num_items`` items in order, or none (:class:`Empty`) if
        the queue holds fewer."""
        if not isinstance(num_items, int) or isinstance(num_items, bool):
            raise TypeError("Argument 'num_items' must be an int")
        if num_items < 0:
            raise ValueError("'num_items' must be nonnegative")
        return ray.get(self._live_actor().get_nowait_batch.remote(num_items))

    # -- lifetime -------------------------------------------------------------------------
    def shutdown(self, force: bool = False, grace_period_s: float = 5) -> None:
        """Stop the actor holding the items (they are lost) and release its resources.

        Without ``force``, calls already sent to the queue get ``grace_period_s``
        seconds to finish first; with it the actor is killed at once.
        """
        if self.actor is None:
            return
        if not force:
            # Calls from one handle run in order: once this one answers, the earlier
            # non-blocking calls have run (blocked gets/puts end with the actor).
            ray.wait([self.actor.qsize.remote()], timeout=grace_period_s)
        ray.kill(self.actor, no_restart=True)
        self.actor = None

    # -- internals ------------------------------------------------------------------------
    def _live_actor(self):
        if self.actor is None:
            raise RuntimeError("This Queue was shut down; create a new Queue to use one.")
        return self.actor

    def _put_ref(self, item, block: bool, timeout: float | None):
        actor = self._live_actor()
        if not block:
            return actor.put_nowait.remote(item)
        _check_timeout(timeout)
        return actor.put.remote(item, timeout)

    def _get_ref(self, block: bool, timeout: float | None):
        actor = self._live_actor()
        if not block:
            return actor.get_nowait.remote()
        _check_timeout(timeout)
        return actor.get.remote(timeout)


def _check_timeout(timeout: float | None) -> None:
    if timeout is not None and timeout < 0:
        raise ValueError("'timeout' must be a non-negative number")


__all__ = ["Empty", "Full", "Queue"]
