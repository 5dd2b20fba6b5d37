"""The actor side of an actor's worker: construct, checkpoint, and run calls concurrently.

Sync actors run calls one at a time on the main thread (in arrival order).
``max_concurrency > 1`` runs sync calls on a thread pool; an actor with
``async def`` methods runs them as coroutines on its own event loop thread.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ray._private.gcs import keys
from ray._private.runtime.task_submitter import KIND_ACTOR_METHOD, OPTIONS, OWNER

logger = logging.getLogger(__name__)


def become_actor(executor, spec, cls, args, kwargs) -> None:
    core = executor.core
    opts = spec[OPTIONS] or {}
    core.actor_id = opts["actor_id"]
    core.actor_owner = spec[OWNER]
    try:
        import setproctitle

        setproctitle.setproctitle(f"ray::{cls.__name__}")
    except ImportError:
        pass
    instance = cls(*args, **kwargs)
    executor.actor = instance
    executor.actor_class_name = cls.__name__
    _restore_checkpoint(core, instance)
    executor.checkpoint_state = [0, time.monotonic()]
    if opts.get("is_async"):
        executor.concurrent = AsyncCalls(executor, opts.get("max_concurrency", 1000))
    elif opts.get("max_concurrency", 1) > 1:
        executor.concurrent = ThreadedCalls(executor, opts["max_concurrency"])


def _checkpoint_key(actor_id: bytes) -> str:
    return keys.kv("checkpoints", actor_id.hex())


def _restore_checkpoint(core, instance) -> None:
    from ray.actor import Checkpoint, Checkpointable

    if not isinstance(instance, Checkpointable):
        return
    raw = core.gcs.lrange(_checkpoint_key(core.actor_id))
    if not raw:
        return
    import msgpack

    entries = [msgpack.unpackb(r) for r in raw]
    available = [Checkpoint(cid, ts) for cid, ts in reversed(entries)]
    instance.load_checkpoint(core.actor_id, available)


def maybe_checkpoint(executor) -> None:
    from ray.actor import Checkpointable, CheckpointContext

    instance = executor.actor
    if not isinstance(instance, Checkpointable):
        return
    state = executor.checkpoint_state
    state[0] += 1
    core = executor.core
    ctx = CheckpointContext(core.actor_id, state[0], (time.monotonic() - state[1]) * 1000)
    if not instance.should_checkpoint(ctx):
        return
    import msgpack

    checkpoint_id = os.urandom(20)
    instance.save_checkpoint(core.actor_id, checkpoint_id)
    key = _checkpoint_key(core.actor_id)
    core.gcs.rpush(key, msgpack.packb([checkpoint_id, time.time()]), max_len=20)
    executor.checkpoint_state = [0, time.monotonic()]


class ThreadedCalls:
    """Sync methods on a pool of ``max_concurrency`` threads."""

    def __init__(self, executor, max_concurrency: int):
        self.executor = executor
        self.pool = ThreadPoolExecutor(max_concurrency, thread_name_prefix="ray-actor")

    def submit(self, peer, spec) -> None:
        def run():
            done = self.executor.execute(spec)
            _reply(peer, done)

        self.pool.submit(run)


class AsyncCalls:
    """Coroutine methods on the actor's event loop (at most ``max_concurrency`` at once)."""

    def __init__(self, executor, max_concurrency: int):
        self.executor = executor
        self.loop = asyncio.new_event_loop()
        self.sem = None
        self.max_concurrency = max_concurrency
        self.thread = threading.Thread(target=self._run, name="ray-actor-loop", daemon=True)
        self.thread.start()

    def _run(self):
        asyncio.set_event_loop(self.loop)
        self.sem = asyncio.Semaphore(self.max_concurrency)
        self.loop.run_forever()

    def submit(self, peer, spec) -> None:
        executor = self.executor
        prepared = executor.prepare(spec)
        if prepared[0] == "done":
            _reply(peer, prepared[1])
            return
        _, fn, args, kwargs, ctx = prepared
        if not inspect.iscoroutinefunction(fn):
            # A sync method on an async actor runs on the loop thread too, in order.
            async def call_sync():
                return fn(*args, **kwargs)

            coro_fn = call_sync
        else:
            async def coro_fn():
                return await fn(*args, **kwargs)

        async def run():
            async with self.sem:
                try:
                    value = await coro_fn()
                    done = executor.finish(spec, ctx, value=value)
                except BaseException as exc:  # noqa: BLE001
                    done = executor.finish(spec, ctx, error=exc)
            _reply(peer, done)

        asyncio.run_coroutine_threadsafe(run(), self.loop)


def _reply(peer, done) -> None:
    try:
        peer.notify("tasks_done", [done])
    except Exception:
        logger.debug("caller gone; dropping a result")


def is_concurrent_call(executor, spec) -> bool:
    return executor.concurrent is not None and spec[10] == KIND_ACTOR_METHOD
