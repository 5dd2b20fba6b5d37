"""The actor side of an actor's worker: construct, checkpoint, and run calls concurrently.

Sync actors run calls one at a time on the main thread (in arrival order).
``max_concurrency > 1`` runs sync calls on a thread pool; an actor with
``async def`` methods runs them as coroutines on its own event loop thread.
These are helpers of ``TaskExecutor`` (they use its context and state).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import msgpack

from ray._private.checkpoint import Checkpoint, Checkpointable, CheckpointContext
from ray._private.gcs import keys
from ray._private.messages import TaskDone, TaskSpec
from ray._private.rpc import RpcPeer
from ray.exceptions import AsyncioActorExit, RayError, TaskCancelledError

if TYPE_CHECKING:
    from ray._private.runtime.task_executor import Prepared, TaskExecutor


class ExitWorker(SystemExit):
    """Ends the worker's task loop cleanly (max_calls, exit_actor, actor termination).

    A ``SystemExit``, as Ray's: user code that catches it does not keep the actor alive
    (the executor's ``exit_requested`` flag ends it after the call returns)."""

logger = logging.getLogger(__name__)


def become_actor(executor: TaskExecutor, spec: TaskSpec, prepared: Prepared) -> None:
    """Run an actor's creation task: set up its call runners, then its constructor (an
    async actor's on its event loop, so ``asyncio.create_task`` works in ``__init__``)."""
    creation = spec.actor_creation
    assert creation is not None, "an actor creation task carries ActorCreation"
    ctx = executor.context
    ctx.actor_id = creation.actor_id
    ctx.actor_owner = spec.owner
    ctx.actor_name = creation.name
    ctx.actor_restarts = creation.num_restarts
    cls = prepared.fn
    executor.actor_class_name = ctx.actor_class = cls.__name__
    executor.set_title(f"ray::{cls.__name__}")
    groups = dict(creation.concurrency_groups or {})
    if creation.is_async:
        executor.concurrent = AsyncCalls(executor, creation.max_concurrency or 1000, groups)
    elif creation.max_concurrency > 1 or groups:
        executor.concurrent = ThreadedCalls(executor, creation.max_concurrency, groups)
    # The instance exists before __init__ runs, so an error raised there can show the
    # actor's repr (as Ray's traceback does).
    instance = _new_instance(cls, prepared.args, prepared.kwargs)  # type: ignore[arg-type]
    executor.actor = instance
    executor.actor_methods = {}
    init = type(instance).__init__
    if isinstance(executor.concurrent, AsyncCalls):
        executor.concurrent.run_sync(lambda: init(instance, *prepared.args, **prepared.kwargs))
    else:
        init(instance, *prepared.args, **prepared.kwargs)
    _restore_checkpoint(executor, instance)
    # None for an actor that does not checkpoint: its calls skip maybe_checkpoint.
    executor.checkpoint_state = ([0, time.monotonic()] if isinstance(instance, Checkpointable)
                                 else None)


def _new_instance(cls: type, args: list, kwargs: dict) -> Any:
    new: Callable[..., Any] = cls.__new__
    if new is object.__new__:
        return new(cls)
    return new(cls, *args, **kwargs)


def actor_repr(instance) -> str | None:
    """The actor's repr for error headers (a failing ``__repr__`` gets object's)."""
    if instance is None:
        return None
    try:
        return repr(instance)
    except Exception:  # noqa: BLE001 - the user's __repr__ failed: fall back to object's
        return object.__repr__(instance)


def method(executor: TaskExecutor, name: str) -> Callable:
    """The callable an actor call runs: looked up on the actor's class, as Ray does (an
    instance attribute named like a method does not shadow it), bound to the instance;
    static and class methods are called as they are. ``__ray_ready__`` and
    ``__ray_call__`` are every actor's (``__ray_terminate__`` is the executor's)."""
    found = executor.actor_methods.get(name)
    if found is None:
        found = executor.actor_methods[name] = bind_method(executor.actor, name)
    return found


def _ready() -> bool:
    return True


def bind_method(instance, name: str) -> Callable:
    if name == "__ray_ready__":
        return _ready
    if name == "__ray_call__":
        return functools.partial(_call_with_actor, instance)
    cls = type(instance)
    try:
        raw = inspect.getattr_static(cls, name)
    except AttributeError:
        raise AttributeError(f"The actor class {cls.__name__} has no method {name!r}") from None
    member = getattr(cls, name)
    if isinstance(raw, staticmethod | classmethod):
        return member
    get = getattr(type(member), "__get__", None)
    if get is not None:
        return get(member, instance, cls)
    return functools.partial(member, instance)


def _call_with_actor(instance, fn: Callable, *args, **kwargs):
    """``actor.__ray_call__.remote(fn, *args)``: ``fn(actor, *args)`` inside the actor."""
    return fn(instance, *args, **kwargs)


def _checkpoint_key(actor_id: bytes) -> str:
    return keys.kv("checkpoints", actor_id.hex())


def _restore_checkpoint(executor: TaskExecutor, instance) -> None:
    if not isinstance(instance, Checkpointable):
        return
    actor_id = executor.context.actor_id
    assert actor_id is not None, "restored while becoming an actor"
    raw = executor._gcs.lrange(_checkpoint_key(actor_id))
    if not raw:
        return
    entries = [msgpack.unpackb(r) for r in raw]
    available = [Checkpoint(cid, ts) for cid, ts in reversed(entries)]
    instance.load_checkpoint(actor_id, available)


def maybe_checkpoint(executor: TaskExecutor) -> None:
    """After a call of a ``Checkpointable`` actor: ``become_actor`` sets
    ``executor.checkpoint_state`` only for those (the isinstance narrows the type)."""
    instance = executor.actor
    state = executor.checkpoint_state
    if state is None or not isinstance(instance, Checkpointable):
        return
    state[0] += 1
    actor_id = executor.context.actor_id
    ctx = CheckpointContext(actor_id, state[0], (time.monotonic() - state[1]) * 1000)
    if not instance.should_checkpoint(ctx):
        return
    checkpoint_id = os.urandom(20)
    instance.save_checkpoint(actor_id, checkpoint_id)
    executor._gcs.rpush(_checkpoint_key(actor_id), msgpack.packb([checkpoint_id, time.time()]),
                        max_len=20)
    executor.checkpoint_state = [0, time.monotonic()]


def _group_of(executor: TaskExecutor, spec: TaskSpec, groups: dict) -> str | None:
    """The concurrency group a call runs in: the call's ``.options(concurrency_group=)``,
    else its method's ``@ray.method(concurrency_group=)``, else the default (None)."""
    group = spec.concurrency_group
    if group is None and groups:
        group = getattr(method(executor, spec.method or ""), "__ray_concurrency_group__", None)
    if group is not None and group not in groups:
        raise ValueError(
            f"The actor {executor.actor_class_name} has no concurrency group {group!r} (its "
            f"groups: {sorted(groups)}); declare it in @ray.remote(concurrency_groups=...).")
    return group


class ThreadedCalls:
    """Sync methods on threads: the default group on a pool of ``max_concurrency`` threads
    (with ``max_concurrency`` 1, on the main thread, in arrival order), each concurrency
    group on a pool of its own size."""

    def __init__(self, executor: TaskExecutor, max_concurrency: int, groups: dict):
        self.executor = executor
        self.groups = groups
        self.pools: dict[str | None, ThreadPoolExecutor] = {
            name: ThreadPoolExecutor(size, thread_name_prefix=f"ray-actor-{name}")
            for name, size in groups.items()}
        if max_concurrency > 1:
            self.pools[None] = ThreadPoolExecutor(max_concurrency,
                                                  thread_name_prefix="ray-actor")

    def submit(self, peer: RpcPeer, spec: TaskSpec) -> bool:
        """Queue the call on its group's pool; False: it runs on the main thread."""
        executor = self.executor
        try:
            group = _group_of(executor, spec, self.groups)
        except (AttributeError, ValueError) as exc:
            _reply(peer, executor.fail(spec, exc))
            return True
        pool = self.pools.get(group)
        if pool is None:
            return False

        def run():
            if executor.exiting:
                _reply(peer, executor.fail_exited(spec))
                return
            try:  # (execute answers a call cancelled while it waited for a thread)
                _reply(peer, executor.execute(spec))
            except ExitWorker as stop:
                if stop.args:
                    _reply(peer, stop.args[0])
                executor.exit_soon()

        pool.submit(run)
        return True

    def cancel(self, task_id: bytes) -> bool:
        return False  # a running sync call cannot be interrupted off the main thread


class AsyncCalls:
    """Coroutine methods on the actor's event loop (at most ``max_concurrency`` at once in
    the default group); each concurrency group has an event loop thread of its own, with
    at most its size of calls at once. ``ray.cancel`` cancels a call's asyncio task."""

    def __init__(self, executor: TaskExecutor, max_concurrency: int, groups: dict):
        self.executor = executor
        self.groups = groups
        self.loops: dict[str | None, _GroupLoop] = {None: _GroupLoop(None, max_concurrency)}
        for name, size in groups.items():
            self.loops[name] = _GroupLoop(name, size)
        self.loop = self.loops[None].loop
        self.running: dict[bytes, concurrent.futures.Future] = {}

    def run_sync(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` on the default loop's thread and wait (the constructor)."""
        async def call():
            return fn()

        return asyncio.run_coroutine_threadsafe(call(), self.loop).result()

    def submit(self, peer: RpcPeer, spec: TaskSpec) -> bool:
        executor = self.executor
        prepared = executor.prepare(spec)
        if isinstance(prepared, TaskDone):
            _reply(peer, prepared)
            return True
        try:
            group = self.loops[_group_of(executor, spec, self.groups)]
        except (AttributeError, ValueError) as exc:
            _reply(peer, executor.finish(spec, prepared, error=exc))
            return True
        fn, args, kwargs = prepared.fn, prepared.args, prepared.kwargs
        if not inspect.iscoroutinefunction(fn):
            # A sync method on an async actor runs on the loop thread too, in order.
            async def coro_fn():
                return fn(*args, **kwargs)
        else:
            async def coro_fn():
                return await fn(*args, **kwargs)

        task_id = spec.task_id

        async def run():
            try:
                async with group.semaphore():
                    if executor.exiting:
                        done = executor.fail_exited(spec)
                    else:
                        try:
                            value = await coro_fn()
                            if inspect.isasyncgen(value):  # values stream out as it yields
                                done = await executor.finish_async_generator(spec, prepared,
                                                                             value)
                            else:
                                done = executor.finish(spec, prepared, value=value)
                        except (ExitWorker, AsyncioActorExit):
                            done = executor.exited_result(spec, prepared)
                        except BaseException as exc:  # noqa: BLE001 - the call's error
                            if isinstance(exc, asyncio.CancelledError):
                                exc = TaskCancelledError(task_id.hex())
                            done = executor.finish(spec, prepared, error=exc)
                        if executor.exit_requested:
                            done = executor.exited_result(spec, prepared)
            except asyncio.CancelledError:  # cancelled while waiting for its group's turn
                done = executor.finish(spec, prepared, error=TaskCancelledError(task_id.hex()))
            finally:
                self.running.pop(task_id, None)
            _reply(peer, done)
            if executor.exit_requested:
                executor.exit_soon()

        def start() -> None:
            future = asyncio.run_coroutine_threadsafe(run(), group.loop)
            self.running[task_id] = future
            if future.done():  # (it finished before it was registered)
                self.running.pop(task_id, None)

        if not executor.start_unless_cancelled(task_id, start):
            _reply(peer, executor.finish(spec, prepared,
                                         error=TaskCancelledError(task_id.hex())))
        return True

    def cancel(self, task_id: bytes) -> bool:
        """Cancel a queued or running call (its caller gets TaskCancelledError). Always
        handled here: a call not started yet sees the executor's cancelled mark, one that
        finished needs nothing (the main thread, which runs no call, is never
        interrupted)."""
        future = self.running.get(task_id)
        if future is not None:
            future.cancel()
        return True


class _GroupLoop:
    """One concurrency group of an async actor: an event loop thread and its limit."""

    def __init__(self, name: str | None, size: int):
        self.loop = asyncio.new_event_loop()
        self.size = size
        self._sem: asyncio.Semaphore | None = None
        self.thread = threading.Thread(target=self._run, daemon=True,
                                       name="ray-actor-loop" + (f"-{name}" if name else ""))
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self._sem = asyncio.Semaphore(self.size)
        self.loop.run_forever()

    def semaphore(self) -> asyncio.Semaphore:
        assert self._sem is not None, "the loop thread runs before any call reaches it"
        return self._sem


def reply(peer: RpcPeer, done: list[TaskDone]) -> None:
    """Send finished tasks to their owner (gone owners lose their results: nobody asks)."""
    try:
        peer.notify("tasks_done", [d.to_wire() for d in done])
    except RayError:
        logger.debug("owner gone; dropping %d results", len(done))


def _reply(peer: RpcPeer, done: TaskDone) -> None:
    reply(peer, [done])
