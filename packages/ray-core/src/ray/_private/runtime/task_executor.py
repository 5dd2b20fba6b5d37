"""Worker side: run pushed tasks on the main thread and report results.

The I/O thread queues batches of specs; the main thread runs them in order and
sends results back in batches (one message per burst of finished tasks,
flushed whenever the queue runs dry), which is what makes no-op tasks cheap.
Actor calls with concurrency go to ``actor_worker``'s thread pool or event loop.

The executor owns the process's ``TaskContext`` (the running task's id, resources,
placement group, actor): it is the only writer.

``ray.cancel``: a ``cancel_task`` message marks the task; one not started yet is
answered with ``TaskCancelledError``, a running one is interrupted by a SIGINT to the
main thread whose handler raises only while that task still runs (``force``: the
worker exits). Generator tasks: ``generator_returns.GeneratorReturns`` stores each yielded value as it
comes (streaming: sent to the owner at once as a ``GeneratorItem``; with backpressure the
task then pauses while that many values are not taken, as the owner's
``generator_consumed`` messages say).
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from types import GeneratorType
from typing import Any

from plasma.errors import StoreConnectionError
from ray._private import runtime_env, signals
from ray._private.gcs import keys
from ray._private.messages import (
    ActorExited,
    CancelTask,
    Inline,
    InlineArg,
    ReturnObject,
    TaskDone,
    TaskKind,
    TaskSpec,
)
from ray._private.rpc import RpcPeer
from ray._private.runtime import actor_worker
from ray._private.runtime import serialization as ser
from ray._private.runtime.actor_worker import ExitWorker, reply
from ray._private.runtime.context import JobState, TaskContext
from ray._private.runtime.generator_returns import GeneratorReturns
from ray._private.runtime.objects import NOT_LOCAL, ObjectClient
from ray._private.runtime.profiler import Profiler
from ray.exceptions import (
    ActorDiedError,
    AsyncioActorExit,
    RayActorError,
    RayError,
    RayTaskError,
    TaskCancelledError,
)

try:
    from setproctitle import setproctitle as _setproctitle
except ImportError:  # pragma: no cover - optional
    _setproctitle = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

TERMINATE = "__ray_terminate__"
_MAX_BATCH_DELAY_S = 0.001
# Fetching a task's arguments lends its CPU only after this long (see get_by_ids).
_LEND_CPU_AFTER_S = 0.05


def _span_extra(spec: TaskSpec):
    """The execution span's extra: the task id alone, or ``(task id, submitted at,
    ids of the arguments passed by reference)`` (the timeline's scheduling phase and
    dependency arrows; see ``profiling.decode_batches``). A reference the owner had
    already resolved travels inline with its id."""
    deps = tuple([a.object_id for a in spec.args if type(a) is not InlineArg
                  or a.object_id is not None]) if spec.args else ()
    if spec.submitted_at is None and not deps:
        return spec.task_id
    return (spec.task_id, spec.submitted_at, deps)


def _lost_the_store(error: BaseException) -> bool:
    """Whether ``error`` (or what it was raised from) is this node's object store going
    away: the node is dying, which is no error of the task's."""
    return any(isinstance(e, StoreConnectionError)
               for e in (error, error.__cause__, error.__context__))


def _exit_node_gone(name: str, error: BaseException) -> None:
    """The node's store (in its raylet) is gone, so the node is: this worker ends as it
    does when its raylet connection drops, instead of reporting the node's death as the
    task's own error. Its owner sees the worker die, and retries the task elsewhere
    (``max_retries``) or raises ``WorkerCrashedError``, as Ray does."""
    logger.error("%s: lost this node's object store (%s); the worker exits", name, error)
    logging.shutdown()
    os._exit(1)


class _Interrupted(KeyboardInterrupt):
    """``ray.cancel`` stopped the running task (raised in it by the SIGINT handler)."""


_MAX_CANCELLED_REMEMBERED = 10_000
# How often a streaming task paused by backpressure looks whether it was cancelled.
_BACKPRESSURE_CANCEL_CHECK_S = 0.1


def _not_called() -> None:
    """The callable of a task that failed before it could be called."""


class Prepared:
    """A task ready to call: the callable, its arguments, and when it started."""

    __slots__ = ("fn", "args", "kwargs", "started", "name")

    def __init__(self, fn: Callable, args: list, kwargs: dict, started: float, name: str):
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.started = started
        self.name = name


class TaskExecutor:
    def __init__(self, *, context: TaskContext, job: JobState, objects: ObjectClient, gcs,
                 profiler: Profiler, node_ip: str,
                 notify_owner: Callable[[Any, str, Any], None],
                 cancel_children: Callable[[bytes, bool], None] | None = None,
                 task_queue: Any = None):
        self.context = context
        self._job = job
        self._objects = objects
        self._gcs = gcs
        self._profiler = profiler
        self._node_ip = node_ip
        self._notify_owner = notify_owner  # (owner address, method, actor id)
        # Pushed tasks, for the main thread. The runtime passes an event_loop.LoopQueue:
        # an idle main thread runs the I/O loop itself and receives its next task
        # without a hand-off from the I/O thread.
        self.queue = queue.SimpleQueue() if task_queue is None else task_queue
        self.calls_per_function: dict[bytes, int] = {}
        self.actor = None
        self.actor_class_name: str | None = None
        self.concurrent: actor_worker.ThreadedCalls | actor_worker.AsyncCalls | None = None
        self.checkpoint_state: list | None = None
        self._method_names: dict[str, str] = {}  # an actor's method -> "Class.method"
        self.exit_requested = False
        # Why the actor exits on purpose (exit_actor, __ray_terminate__), for its callers.
        self.exit_detail = ""
        self.exiting = False  # the main loop is ending: calls not started fail
        self.actor_methods: dict[str, Callable] = {}  # actor_worker.method's cache
        self._creator: RpcPeer | None = None  # the owner's connection (actor workers)
        self._title: str | None = None
        self._visible_gpus: str | None = None
        # ray.cancel: tasks to drop when they come up (ordered: the oldest are forgotten),
        # and the one the SIGINT handler may interrupt.
        self._cancel_children = cancel_children
        self._cancelled: dict[bytes, None] = {}
        self._cancel_lock = threading.Lock()
        self._interrupt_target: bytes | None = None
        self._main_thread: int | None = None
        # Results of finished tasks not sent yet (run_forever's batch, by owner peer).
        self._unsent: dict = {}
        # Running streaming tasks with backpressure: how many values their owners took.
        self._consumed: dict[bytes, int] = {}
        self._consumed_changed = threading.Condition()

    def push(self, peer: RpcPeer, specs: list) -> None:
        """``push_tasks`` from an owner (I/O thread; a malformed spec fails the message)."""
        self.queue.put((peer, [TaskSpec.from_wire(wire) for wire in specs]))

    def stop(self) -> None:
        self.queue.put(None)

    # -- streaming backpressure -----------------------------------------------------------
    def generator_consumed(self, peer: RpcPeer, task_id: bytes, taken: int) -> None:
        """``generator_consumed`` from a streaming task's owner (I/O thread): its caller
        has taken ``taken`` values (one for a task that ended already is dropped)."""
        with self._consumed_changed:
            if task_id in self._consumed and taken > self._consumed[task_id]:
                self._consumed[task_id] = taken
                self._consumed_changed.notify_all()

    def track_consumed(self, task_id: bytes, running: bool) -> None:
        with self._consumed_changed:
            if running:
                self._consumed.setdefault(task_id, 0)
            else:
                self._consumed.pop(task_id, None)

    def wait_consumed(self, task_id: bytes, generated: int, limit: int) -> None:
        """Pause a streaming task while ``limit`` of the ``generated`` values it yielded
        are not taken; ``ray.cancel`` still stops it (looked at between short waits)."""
        if generated - self._consumed.get(task_id, generated) >= limit:
            self.send_finished()  # (its caller may wait for one of them before taking more)
        with self._consumed_changed:
            while generated - self._consumed.get(task_id, generated) >= limit:
                self.check_cancelled(task_id)
                self._consumed_changed.wait(_BACKPRESSURE_CANCEL_CHECK_S)

    # -- ray.cancel ------------------------------------------------------------------
    def cancel(self, peer: RpcPeer, wire: list) -> None:
        """``cancel_task`` from an owner (I/O thread): drop the task if it has not started,
        else interrupt it (``force``: end this worker process)."""
        msg = CancelTask.from_wire(wire)
        if msg.recursive and self._cancel_children is not None:
            self._cancel_children(msg.task_id, msg.force)
        with self._cancel_lock:
            self._cancelled[msg.task_id] = None
            while len(self._cancelled) > _MAX_CANCELLED_REMEMBERED:
                del self._cancelled[next(iter(self._cancelled))]
            if self.concurrent is not None and self.concurrent.cancel(msg.task_id):
                return  # an async actor's call: its asyncio task is (or will be) cancelled
            running = self.context.task_id == msg.task_id
        if not running or self._main_thread is None:
            return  # dropped when it comes up (execute checks)
        if msg.force:
            logger.warning("task %s force-cancelled: this worker exits", msg.task_id.hex())
            os._exit(1)
        self._interrupt_target = msg.task_id
        signal.pthread_kill(self._main_thread, signal.SIGINT)

    def _on_sigint(self, signum, frame) -> None:
        target = self._interrupt_target
        if target is not None and target == self.context.task_id:
            self._interrupt_target = None
            raise _Interrupted()
        # An interrupt for a task that already ended: there is nothing to stop.

    def start_unless_cancelled(self, task_id: bytes, start: Callable[[], None]) -> bool:
        """Run ``start`` (which registers a call where ``cancel`` finds it) unless the call
        was cancelled already; atomic with ``cancel``, so one of the two sees the other."""
        with self._cancel_lock:
            if task_id in self._cancelled:
                return False
            start()
            return True

    def check_cancelled(self, task_id: bytes) -> None:
        """Raise in a task (a generator between values) that ray.cancel stopped."""
        if task_id in self._cancelled:
            raise _Interrupted()

    def _is_cancelled(self, task_id: bytes) -> bool:
        return task_id in self._cancelled

    def send_finished(self) -> None:
        """Send the results batched so far now: the running task is about to wait (ray.get,
        ray.wait), perhaps for one of them (a quick task pushed before it in the same
        batch), which its owner learns of only from this reply. Main thread only."""
        if self._unsent and threading.get_ident() == self._main_thread:
            self._flush(self._unsent)

    def run_forever(self) -> None:
        self._main_thread = threading.get_ident()
        signal.signal(signal.SIGINT, self._on_sigint)
        q = self.queue
        pending = self._unsent
        perf = time.perf_counter
        try:
            while True:
                item = q.get()
                batch_start = perf()
                while item is not None:
                    if item is _EXIT:  # an actor call on another thread ended the actor
                        return
                    peer, specs = item
                    for i, spec in enumerate(specs):
                        if self.concurrent is not None and spec.kind == TaskKind.ACTOR_METHOD \
                                and spec.method != TERMINATE \
                                and self.concurrent.submit(peer, spec):
                            continue
                        if spec.kind == TaskKind.ACTOR_CREATION:
                            self._creator = peer  # where "actor_exited" goes, in order
                        try:
                            done = self.execute(spec)
                        except ExitWorker as stop:
                            out = pending.setdefault(peer, [])
                            if stop.args:
                                out.append(stop.args[0])
                            if self.exit_requested:  # the actor exits: the rest fail
                                out.extend(self.fail_exited(rest) for rest in specs[i + 1:])
                            return
                        # (looked up after the task ran: send_finished may have sent
                        # the batch while it waited)
                        pending.setdefault(peer, []).append(done)
                        # Results ride together while tasks are quick; a result never
                        # waits behind more than ~1 ms of other work.
                        if perf() - batch_start > _MAX_BATCH_DELAY_S:
                            self._flush(pending)
                            batch_start = perf()
                    if q.empty():
                        break
                    item = q.get()
                self._flush(pending)
                if item is None:
                    return
        finally:
            self.exiting = True
            if self.exit_requested:
                # Before the results: the owner then knows this worker ends itself (and
                # runs its atexit handlers) when a creation result says it exited.
                self._tell_owner_exited()
            self._flush(pending)
            if self.exit_requested:
                self._end_actor()

    @staticmethod
    def _flush(pending: dict) -> None:
        # What the tasks printed reaches the log monitor (and the driver) with their
        # results, even without a newline or an explicit flush.
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # closed or broken by user code: nothing to do
                pass
        for peer, done in pending.items():
            if done:
                reply(peer, done)
        pending.clear()

    def _tell_owner_exited(self) -> None:
        """Tell the actor's owner it exits on purpose (no restart, and why)."""
        ctx = self.context
        if ctx.actor_id is not None and ctx.actor_owner is not None:
            exited = ActorExited(ctx.actor_id, self.exit_detail).to_wire()
            try:
                # On the connection the owner made, so it arrives before that closes.
                if self._creator is not None and not self._creator.closed:
                    self._creator.notify("actor_exited", exited)
                else:
                    self._notify_owner(ctx.actor_owner, "actor_exited", exited)
            except (OSError, RayError) as exc:
                # The owner is gone: nobody is left to restart this actor anyway.
                logger.debug("could not tell the owner actor %s exited: %s",
                             ctx.actor_id.hex(), exc)

    def _end_actor(self) -> None:
        """The actor exits on purpose (its owner was told): fail the calls it received but
        will not run, and run the process's atexit handlers (as a Python process ending
        normally would; ray.kill does not run them)."""
        ctx = self.context
        while True:
            try:
                item = self.queue.get_nowait()
            except queue.Empty:
                break
            if item is None or item is _EXIT:
                continue
            peer, specs = item
            reply(peer, [self.fail_exited(spec) for spec in specs])
        try:
            atexit._run_exitfuncs()
        except Exception:  # noqa: BLE001 - the user's handlers: their errors are printed
            logger.exception("an atexit handler of actor %s failed",
                             ctx.actor_id.hex() if ctx.actor_id else "?")

    # -- exiting on purpose --------------------------------------------------------------
    def request_exit(self, detail: str) -> None:
        """``ray.actor.exit_actor()``: the actor ends once the current call returns (even if
        the caller catches what this raises), its later calls fail."""
        if self.context.actor_id is None:
            raise TypeError(
                "exit_actor API is called on a non-actor worker: call "
                "ray.actor.exit_actor() inside an actor's method to exit it gracefully "
                "(use ray.kill(handle) to kill an actor from outside).")
        self.exit_requested = True
        self.exit_detail = self.exit_detail or detail
        if threading.get_ident() != self._main_thread:
            self.exit_soon()  # a concurrency pool or an event loop: end the main loop too
        if isinstance(self.concurrent, actor_worker.AsyncCalls) \
                and threading.get_ident() != self._main_thread:
            raise AsyncioActorExit()
        raise ExitWorker()

    def exit_soon(self) -> None:
        """End the main loop (from a call that ran on another thread)."""
        self.exit_requested = True
        self.queue.put(_EXIT)

    def _exit_error(self) -> RayActorError:
        actor_id = self.context.actor_id
        return ActorDiedError(exit_message(actor_id, self.exit_detail),
                              actor_id.hex() if actor_id else "")

    def exited_result(self, spec: TaskSpec, prepared: Prepared | None) -> TaskDone:
        """The result of the call during which the actor exited on purpose: it fails
        with the actor's death (as in Ray), its caller learns why."""
        started = prepared.started if prepared is not None else time.perf_counter()
        done = self._done(spec, prepared or Prepared(_not_called, [], {}, started, spec.name),
                          [], self._exit_error(), None)
        return done

    def fail_exited(self, spec: TaskSpec) -> TaskDone:
        """A call the actor received but will not run: it exited on purpose."""
        return self.exited_result(spec, None)

    def fail(self, spec: TaskSpec, error: BaseException) -> TaskDone:
        """A call that cannot start (e.g. it names an unknown concurrency group)."""
        return self.finish(spec, Prepared(_not_called, [], {}, time.perf_counter(),
                                          spec.name), error=error)

    def set_title(self, title: str) -> None:
        """The process title (``ps``, ``psutil.Process().cmdline()``): ``ray::<task>``."""
        if title != self._title and _setproctitle is not None:
            self._title = title
            _setproctitle(title)

    # -- one task --------------------------------------------------------------------
    def prepare(self, spec: TaskSpec) -> Prepared | TaskDone:
        """Resolve the callable and arguments (or the failure to, as a TaskDone)."""
        ctx = self.context
        if spec.job_id != self._job.hex:
            self._job.bind(spec.job_id)
            if self._job.runtime_env:
                runtime_env.put_paths_first()
        started = time.perf_counter()
        name = spec.name
        if spec.kind == TaskKind.NORMAL and spec.name != ctx.task_name:
            ctx.task_name = spec.name
            if _setproctitle is not None:  # ps and log prefixes show ray::f
                _setproctitle(f"ray::{spec.name.rsplit('.', 1)[-1]}")
        ctx.task_id = spec.task_id
        method_name = None
        if spec.kind == TaskKind.ACTOR_METHOD:
            method = spec.method or ""
            method_name = self._method_names.get(method)
            if method_name is None:
                method_name = self._method_names[method] = f"{self.actor_class_name}.{method}"
        if spec.enable_task_events:
            # The name Ray lists: Class.method, f (not module.f), Class.__init__.
            self._profiler.task_events.started(
                spec.task_id, method_name if method_name is not None
                else spec.name.rsplit(".", 1)[-1] if spec.kind == TaskKind.NORMAL
                else spec.name)
        if method_name is None:  # an actor keeps what its creation leased
            self._set_resource_ids(spec.resource_ids)
            ctx.placement_group = spec.placement_group
        try:
            args, kwargs = self._resolve_args(spec)
            if method_name is not None:
                fn = actor_worker.method(self, method)
                name = method_name
                # ps shows ray::Class.method, or the name the call was given (.options).
                title_name = name if spec.name == spec.method else spec.name
                if title_name != ctx.task_name:
                    ctx.task_name = title_name
                    self.set_title(f"ray::{title_name}")
            else:
                fn = self._job.functions.load(spec.function_id, spec.job_id)
        except BaseException as exc:  # noqa: BLE001 - reported to the owner as the task's error
            return self.finish(spec, Prepared(_not_called, [], {}, started, name), error=exc)
        return Prepared(fn, args, kwargs, started, name)

    def finish(self, spec: TaskSpec, prepared: Prepared, *, value: Any = None,
               error: BaseException | None = None) -> TaskDone:
        returns: list[ReturnObject] = []
        yielded: GeneratorReturns | None = None
        if error is None:
            try:
                if spec.num_returns < 0:  # streaming or dynamic: values one by one
                    yielded = GeneratorReturns(self, self._objects, self._notify_owner, spec,
                                            prepared.name)
                    error = yielded.drain(value)
                elif type(value) is GeneratorType:  # a generator with a fixed num_returns
                    returns, error = self._generator_returns(
                        spec.return_ids(), value, spec.num_returns, prepared.name)
                else:
                    returns = self._store_returns(spec.return_ids(), value, spec.num_returns,
                                                  prepared.name)
            except BaseException as exc:  # noqa: BLE001 - e.g. unpicklable: the task's error
                error = exc
        return self._done(spec, prepared, returns, error, yielded)

    async def finish_async_generator(self, spec: TaskSpec, prepared: Prepared,
                                     values: Any) -> TaskDone:
        """``finish`` for an async generator (an async actor's method), on its loop."""
        yielded = GeneratorReturns(self, self._objects, self._notify_owner, spec, prepared.name)
        try:
            error = await yielded.drain_async(values)
        except BaseException as exc:  # noqa: BLE001 - e.g. unpicklable: the task's error
            error = exc
        return self._done(spec, prepared, [], error, yielded)

    def _done(self, spec: TaskSpec, prepared: Prepared, returns: list[ReturnObject],
              error: BaseException | None, yielded: GeneratorReturns | None) -> TaskDone:
        if error is not None and _lost_the_store(error):
            _exit_node_gone(prepared.name, error)
        if error is not None and (isinstance(error, KeyboardInterrupt) or self._cancelled
                                  and spec.task_id in self._cancelled):
            error = TaskCancelledError(spec.task_id.hex())
        if self._cancelled:
            with self._cancel_lock:
                self._cancelled.pop(spec.task_id, None)
        if error is None and yielded is not None:
            try:
                returns = yielded.returns()
            except BaseException as exc:  # noqa: BLE001 - the store failed: the task's error
                error = exc
        if error is not None:
            return_ids = spec.return_ids()
            failed = self._error_results(return_ids[len(returns):] if yielded is None
                                         else return_ids, error, prepared.name)
            returns = returns + failed if yielded is None else failed + yielded.items
            if spec.enable_task_events:
                self._profiler.task_events.failed(spec.task_id, error)
        elif spec.enable_task_events:
            self._profiler.task_events.finished(spec.task_id)
        self.context.task_id = self.context.base_task_id
        return TaskDone(spec.task_id, returns, time.perf_counter() - prepared.started,
                        None if yielded is None else yielded.count)

    def _generator_returns(self, return_ids: list[bytes], values, num_returns: int, name: str
                           ) -> tuple[list[ReturnObject], BaseException | None]:
        """A generator function called with a fixed ``num_returns``: its first values are
        the returns (fewer is an error; more are dropped with a warning, as in Ray). An
        error it raises is the value of the returns it did not reach."""
        returns: list[ReturnObject] = []
        try:
            for value in values:
                if len(returns) == num_returns:
                    logger.error("%s yielded more than its num_returns=%d values; the rest "
                                 "are dropped", name, num_returns)
                    break
                returns.append(self._objects.store_return(return_ids[len(returns)], value))
        except Exception as exc:  # noqa: BLE001 - the generator's error: the rest's value
            return returns, exc
        if len(returns) < num_returns:
            return returns, ValueError(
                f"{name} declares num_returns={num_returns} but its generator yielded only "
                f"{len(returns)} values.")
        return returns, None

    def execute(self, spec: TaskSpec) -> TaskDone:
        kind = spec.kind
        if kind == TaskKind.ACTOR_METHOD and spec.method == TERMINATE:
            self.exit_requested = True
            self.exit_detail = self.exit_detail or TERMINATE_DETAIL
            raise ExitWorker(self.exited_result(spec, None))
        if self._cancelled and spec.task_id in self._cancelled:
            return self.finish(spec, Prepared(_not_called, [], {}, time.perf_counter(),
                                              spec.name), error=_Interrupted())
        prepared = self.prepare(spec)
        if isinstance(prepared, TaskDone):
            return prepared
        # The execution span, recorded inline (no context-manager object): this runs
        # around every task and is most of what profiling costs a worker.
        events = self._profiler.events()
        start = time.time() if events is not None else 0.0
        try:
            try:
                if kind == TaskKind.ACTOR_CREATION:
                    actor_worker.become_actor(self, spec, prepared)
                    value = None
                else:
                    value = prepared.fn(*prepared.args, **prepared.kwargs)
            finally:
                if events is not None:
                    events.record("task:execute", prepared.name, start, _span_extra(spec))
        except ExitWorker:
            if not self.exit_requested:  # raised by the runtime (max_calls): not an error
                raise
            raise ExitWorker(self.exited_result(spec, prepared)) from None
        except SystemExit:
            if kind != TaskKind.NORMAL and self.exit_requested:
                raise ExitWorker(self.exited_result(spec, prepared)) from None
            # The user's code asked the process to exit: it does (as in Ray; the owner
            # sees the worker die and retries or raises WorkerCrashedError).
            logger.warning("%s raised SystemExit: this worker exits", prepared.name)
            self.exit_requested = kind != TaskKind.NORMAL
            self.exit_detail = self.exit_detail or f"SystemExit was raised in {prepared.name}"
            raise ExitWorker() from None
        except BaseException as exc:  # noqa: BLE001 - user code may raise anything
            if self.exit_requested and kind != TaskKind.NORMAL:  # exit_actor() was caught
                raise ExitWorker(self.exited_result(spec, prepared)) from None
            return self.finish(spec, prepared, error=exc)
        if self.exit_requested and kind != TaskKind.NORMAL:  # exit_actor() was caught
            raise ExitWorker(self.exited_result(spec, prepared))
        done = self.finish(spec, prepared, value=value)
        if kind == TaskKind.ACTOR_METHOD:
            if self.checkpoint_state is not None:
                actor_worker.maybe_checkpoint(self)
        elif kind == TaskKind.NORMAL and spec.max_calls:
            fid = spec.function_id
            count = self.calls_per_function[fid] = self.calls_per_function.get(fid, 0) + 1
            if count >= spec.max_calls:
                raise ExitWorker(done)
        return done

    def _resolve_args(self, spec: TaskSpec) -> tuple[list, dict]:
        values: list = []
        fetch = []
        failed: RayTaskError | None = None
        for i, arg in enumerate(spec.args):
            if isinstance(arg, InlineArg):
                try:
                    values.append(ser.deserialize(arg.metadata, arg.data))
                except RayTaskError as exc:
                    failed = exc
                    break
            else:
                values.append(None)
                fetch.append((i, arg))
        if failed is None and fetch:
            with self._profiler.span("task:fetch_arguments", spec.name, spec.task_id):
                # The submitter's own objects in this node's store (it pushed the task
                # once they were here) are read at once, without awaiting its answer.
                owner_id = spec.owner.worker_id
                own = [item for item in fetch if item[1].owner.worker_id == owner_id]
                local = self._objects.read_local([a.object_id for _, a in own]) if own else ()
                if any(value is not NOT_LOCAL for value in local):
                    for (i, _), value in zip(own, local):
                        if value is not NOT_LOCAL:
                            values[i] = value
                    fetch = [item for item in fetch if values[item[0]] is None
                             or item[1].owner.worker_id != owner_id]
                if fetch:
                    try:
                        fetched = self._objects.get_by_ids(
                            [(a.object_id, a.owner) for _, a in fetch], None,
                            lend_after_s=_LEND_CPU_AFTER_S)
                    except RayTaskError as exc:
                        failed = exc
                    else:
                        for (i, _), value in zip(fetch, fetched):
                            values[i] = value
        if failed is not None:
            raise_if_dependency_failed(failed)
        kw_names = spec.kwarg_names
        if kw_names:
            n = len(kw_names)
            return values[:-n], dict(zip(kw_names, values[-n:]))
        return values, {}

    def _store_returns(self, return_ids: list[bytes], values: Any, num_returns: int,
                       name: str) -> list[ReturnObject]:
        if num_returns == 0:
            return []
        if num_returns == 1:
            values = (values,)
        else:
            try:
                values = tuple(values)
            except TypeError:
                raise ValueError(
                    f"{name} declares num_returns={num_returns} but returned a "
                    f"{type(values).__name__}, which cannot be unpacked."
                ) from None
            if len(values) != num_returns:
                raise ValueError(
                    f"{name} declares num_returns={num_returns} but returned "
                    f"{len(values)} values."
                )
        return [self._objects.store_return(oid, v) for oid, v in zip(return_ids, values)]

    def _error_results(self, return_ids: list[bytes], exc: BaseException, name: str
                       ) -> list[ReturnObject]:
        if isinstance(exc, TaskCancelledError | RayActorError):
            # ray.cancel stopped this task (ray.get raises TaskCancelledError itself, as in
            # Ray), or the actor ended on purpose while it ran.
            err: BaseException = exc
        else:
            tb = "".join(traceback.format_exception(exc))
            actor_id = self.context.actor_id
            # A RayTaskError the task's code let through (a ray.get of a failed task)
            # becomes this task's own error, caused by the original one (Ray's nesting).
            cause = exc.cause if isinstance(exc, RayTaskError) else exc
            err = RayTaskError(
                name, tb, cause, os.getpid(), self._node_ip,
                proctitle=None if actor_id is None else f"ray::{name}",
                actor_repr=None if actor_id is None else actor_worker.actor_repr(self.actor),
                actor_id=None if actor_id is None else actor_id.hex())
            self._report_error(name, tb, err.as_instanceof_cause())
        small = ser.serialize_error(err)
        value = Inline(small.metadata, small.data)
        return [ReturnObject(oid, value) for oid in return_ids]

    def _report_error(self, name: str, traceback_str: str, err: BaseException) -> None:
        """Keep the failure per job (ray.errors(all_jobs=True), the dashboard), push it to
        the driver, and append an ErrorSignal to the task's (or actor's) signal stream."""
        import msgpack

        ctx = self.context
        error = {"type": "task", "name": name, "pid": os.getpid(), "ip": self._node_ip,
                 "message": traceback_str, "time": time.time(), "job_id": self._job.hex}
        source = ctx.actor_id if ctx.actor_id is not None else ctx.task_id
        try:
            self._gcs.sharded_rpush(keys.errors(self._job.hex),
                                    msgpack.packb(error, use_bin_type=True), max_len=1000)
            self._gcs.publish_obj(keys.channel_errors(self._job.hex), error)
            signals.append(self._gcs, source.hex(), signals.ErrorSignal(err))
        except Exception as exc:  # noqa: BLE001 - GCS down, or an unpicklable cause
            # The task's own result carries the error; only the side channels are lost.
            logger.warning("could not record the failure of %s (task %s) in the GCS: %s",
                           name, ctx.task_id.hex(), exc)

    def _set_resource_ids(self, resource_ids: dict | None) -> None:
        self.context.resource_ids = resource_ids or {}
        gpus = resource_ids.get("GPU") if resource_ids else None
        visible = ",".join(str(i) for i, _ in gpus) if gpus else ""
        if visible != self._visible_gpus:
            self._visible_gpus = visible
            os.environ["CUDA_VISIBLE_DEVICES"] = visible


def raise_if_dependency_failed(error: RayTaskError) -> None:
    """Fail a task whose argument is a failed task's error: its own RayTaskError shows
    "At least one of the input arguments for this task could not be computed:" and then
    the argument's error (Ray's layout; the formatter keys on this function's name)."""
    raise RayTaskError(error.function_name, error.traceback_str, error.cause, error.pid,
                       error.ip, proctitle=error.proctitle, actor_repr=error.actor_repr,
                       actor_id=error.actor_id) from None


# What the owner's callers read when an actor exits on purpose.
TERMINATE_DETAIL = ("__ray_terminate__ was called (all references to the actor were "
                    "removed, or it was asked to terminate)")


def exit_message(actor_id: bytes | None, detail: str) -> str:
    who = f"The actor {actor_id.hex()}" if actor_id else "The actor"
    return (f"{who} is dead because its worker process exited on purpose (Worker exit type: "
            f"INTENDED_USER_EXIT): {detail or 'exit_actor() was called'}. Calls made to it "
            "after that fail.")


_EXIT = object()  # queued by exit_soon: the main loop ends

__all__ = ["TERMINATE_DETAIL", "ExitWorker", "Prepared", "TaskExecutor", "exit_message",
           "raise_if_dependency_failed"]
