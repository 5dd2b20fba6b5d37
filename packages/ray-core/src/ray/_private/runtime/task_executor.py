"""Worker side: run pushed tasks on the main thread and report results.

The I/O thread queues batches of specs; the main thread runs them in order and
sends results back in batches (one message per burst of finished tasks,
flushed whenever the queue runs dry), which is what makes no-op tasks cheap.
Actor calls with concurrency go to ``actor_worker``'s thread pool or event loop.
"""

from __future__ import annotations

import logging
import os
import queue
import time
import traceback

from ray._private import runtime_env
from ray._private.runtime import actor_worker
from ray._private.runtime import serialization as ser
from ray._private.runtime.task_submitter import (
    ARGS,
    FUNCTION_ID,
    JOB,
    KIND,
    KIND_ACTOR_CREATION,
    KIND_ACTOR_METHOD,
    KIND_NORMAL,
    KWARG_NAMES,
    METHOD,
    NAME,
    NUM_RETURNS,
    OPTIONS,
    OWNER,
    RESOURCE_IDS,
    SUBMITTED,
    TASK_ID,
)
from ray.exceptions import RayTaskError

try:
    from setproctitle import setproctitle as _setproctitle
except ImportError:  # pragma: no cover - optional
    _setproctitle = None

logger = logging.getLogger(__name__)

ARG_INLINE, ARG_REF = 0, 1


def _span_extra(spec):
    """The execution span's extra: the task id alone, or ``(task id, submitted at,
    ids of the arguments passed by reference)`` (the timeline's scheduling phase and
    dependency arrows; see ``profiling.decode_batches``). A reference the owner had
    already resolved travels inline with its id as a fourth element."""
    submitted = spec[SUBMITTED] if len(spec) > SUBMITTED else None
    args = spec[ARGS]
    deps = tuple([arg[1] if arg[0] == ARG_REF else arg[3] for arg in args
                  if arg[0] == ARG_REF or len(arg) > 3]) if args else ()
    if submitted is None and not deps:
        return spec[TASK_ID]
    return (spec[TASK_ID], submitted, deps)
RESULT_INLINE, RESULT_PLASMA = 0, 1
TERMINATE = "__ray_terminate__"
_MAX_BATCH_DELAY_S = 0.001


class ExitWorker(BaseException):
    """Ends the worker's task loop cleanly (max_calls, exit_actor, actor termination)."""


class TaskExecutor:
    def __init__(self, core):
        self.core = core
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.calls_per_function: dict[bytes, int] = {}
        self.actor = None
        self.actor_class_name = None
        self.concurrent = None
        self.checkpoint_state = None
        self.exit_requested = False
        self._visible_gpus = None
        self._title = None

    def push(self, peer, specs) -> None:
        self.queue.put((peer, specs))

    def stop(self) -> None:
        self.queue.put(None)

    def run_forever(self) -> None:
        q = self.queue
        pending: dict = {}
        perf = time.perf_counter
        try:
            while True:
                item = q.get()
                batch_start = perf()
                while item is not None:
                    peer, specs = item
                    out = pending.setdefault(peer, [])
                    for spec in specs:
                        if self.concurrent is not None and spec[KIND] == KIND_ACTOR_METHOD \
                                and spec[METHOD] != TERMINATE:
                            self.concurrent.submit(peer, spec)
                            continue
                        try:
                            out.append(self.execute(spec))
                        except ExitWorker as stop:
                            if stop.args:
                                out.append(stop.args[0])
                            return
                        # Results ride together while tasks are quick; a result never
                        # waits behind more than ~1 ms of other work.
                        if perf() - batch_start > _MAX_BATCH_DELAY_S:
                            self._flush(pending)
                            out = pending.setdefault(peer, [])
                            batch_start = perf()
                    if q.empty():
                        break
                    item = q.get()
                self._flush(pending)
                if item is None:
                    return
        finally:
            self._flush(pending)
            self._notify_actor_exit()

    def _flush(self, pending: dict) -> None:
        for peer, done in pending.items():
            if done:
                try:
                    peer.notify("tasks_done", done)
                except Exception:
                    logger.debug("owner gone; dropping %d results", len(done))
        pending.clear()

    def _notify_actor_exit(self) -> None:
        core = self.core
        if core.actor_id is None or not self.exit_requested:
            return
        try:
            owner = core.connect_worker(core.actor_owner)
            owner.notify("actor_exited", core.actor_id)
        except Exception:
            pass

    # -- one task --------------------------------------------------------------------
    def prepare(self, spec):
        """Resolve the callable and arguments: ("call", fn, args, kwargs, ctx) or ("done", d)."""
        core = self.core
        if spec[JOB] != core.job_hex:
            core.bind_job(spec[JOB])
            if core.runtime_env:
                runtime_env.put_paths_first()
        ctx = [time.perf_counter(), spec[NAME]]
        if spec[KIND] == KIND_NORMAL and spec[NAME] != self._title:
            self._set_title(spec[NAME])
        core.current_task_id = spec[TASK_ID]
        if spec[KIND] != KIND_ACTOR_METHOD:  # an actor keeps what its creation leased
            self._set_resource_ids(spec[RESOURCE_IDS])
            options = spec[OPTIONS]
            core.placement_group = options.get("pg") if options else None
        try:
            args, kwargs = self._resolve_args(spec)
            kind = spec[KIND]
            if kind == KIND_ACTOR_METHOD:
                fn = getattr(self.actor, spec[METHOD])
                ctx[1] = f"{self.actor_class_name}.{spec[METHOD]}"
            else:
                fn = core.functions.load(spec[FUNCTION_ID], spec[JOB])
        except BaseException as exc:  # noqa: BLE001
            return ("done", self.finish(spec, ctx, error=exc))
        return ("call", fn, args, kwargs, ctx)

    def finish(self, spec, ctx, *, value=None, error=None):
        core = self.core
        task_id = spec[TASK_ID]
        num_returns = spec[NUM_RETURNS]
        return_ids = [task_id + i.to_bytes(4, "little") for i in range(1, num_returns + 1)]
        if error is None:
            try:
                results = self._store_returns(return_ids, value, num_returns, ctx[1])
            except BaseException as exc:  # noqa: BLE001
                error = exc
        if error is not None:
            results = self._error_results(return_ids, error, ctx[1])
        core.current_task_id = core.base_task_id
        return [task_id, results, time.perf_counter() - ctx[0]]

    def execute(self, spec):
        kind = spec[KIND]
        if kind == KIND_ACTOR_METHOD and spec[METHOD] == TERMINATE:
            self.exit_requested = True
            raise ExitWorker([spec[TASK_ID], [], 0.0])
        prepared = self.prepare(spec)
        if prepared[0] == "done":
            return prepared[1]
        _, fn, args, kwargs, ctx = prepared
        # The execution span, recorded inline (no context-manager object): this runs
        # around every task and is most of what profiling costs a worker.
        events = self.core.profile_events()
        start = time.time() if events is not None else 0.0
        try:
            try:
                if kind == KIND_ACTOR_CREATION:
                    actor_worker.become_actor(self, spec, fn, args, kwargs)
                    value = None
                else:
                    value = fn(*args, **kwargs)
            finally:
                if events is not None:
                    events.record("task:execute", ctx[1], start, _span_extra(spec))
        except ExitWorker:
            self.exit_requested = True
            raise ExitWorker(self.finish(spec, ctx, value=None)) from None
        except BaseException as exc:  # noqa: BLE001 - user code may raise anything
            if isinstance(exc, KeyboardInterrupt):
                raise
            return self.finish(spec, ctx, error=exc)
        done = self.finish(spec, ctx, value=value)
        if kind == KIND_ACTOR_METHOD:
            actor_worker.maybe_checkpoint(self)
        elif kind != KIND_ACTOR_CREATION:
            options = spec[OPTIONS]
            if options and options.get("max_calls"):
                fid = spec[FUNCTION_ID]
                count = self.calls_per_function[fid] = self.calls_per_function.get(fid, 0) + 1
                if count >= options["max_calls"]:
                    raise ExitWorker(done)
        return done

    def _resolve_args(self, spec):
        raw = spec[ARGS]
        values = []
        fetch = []
        for i, arg in enumerate(raw):
            if arg[0] == ARG_INLINE:
                values.append(ser.deserialize(arg[1], arg[2]))
            else:
                values.append(None)
                fetch.append((i, arg[1], arg[2]))
        if fetch:
            with self.core.profile_span("task:fetch_arguments", spec[NAME], spec[TASK_ID]):
                fetched = self.core.get_by_ids([(oid, owner) for _, oid, owner in fetch], None)
            for (i, _, _), value in zip(fetch, fetched):
                values[i] = value
        kw_names = spec[KWARG_NAMES]
        if kw_names:
            n = len(kw_names)
            kwargs = dict(zip(kw_names, values[-n:]))
            values = values[:-n]
        else:
            kwargs = {}
        return values, kwargs

    def _store_returns(self, return_ids, values, num_returns, name):
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
        return [self.core.store_return(oid, value) for oid, value in zip(return_ids, values)]

    def _error_results(self, return_ids, exc, name):
        if isinstance(exc, RayTaskError):
            err = exc  # an upstream task failed: pass its error through unchanged
            tb = exc.traceback_str
        else:
            tb = traceback.format_exc()
            if tb.strip() == "NoneType: None":
                tb = "".join(traceback.format_exception(exc))
            err = RayTaskError(name, tb, exc, os.getpid(), self.core.node_ip).as_instanceof_cause()
            self.core.report_task_error(name, tb)
            self._send_error_signal(err)
        small = ser.serialize_error(err)
        return [[oid, RESULT_INLINE, small.metadata, small.data] for oid in return_ids]

    def _send_error_signal(self, err) -> None:
        from ray.experimental import signal

        core = self.core
        source = core.actor_id if core.actor_id is not None else core.current_task_id
        try:
            signal.send_error(core, source.hex(), err)
        except Exception:
            logger.debug("could not record an error signal", exc_info=True)

    def _set_title(self, name: str) -> None:
        """Show the running function in ps and in log prefixes (ray::module.f)."""
        self._title = name
        if _setproctitle is not None:
            _setproctitle(f"ray::{name.rsplit('.', 1)[-1]}")

    def _set_resource_ids(self, resource_ids) -> None:
        self.core.resource_ids = resource_ids or {}
        visible = ",".join(str(i) for i, _ in (resource_ids or {}).get("GPU", ()))
        if visible != self._visible_gpus:
            self._visible_gpus = visible
            os.environ["CUDA_VISIBLE_DEVICES"] = visible


__all__ = ["OWNER", "ExitWorker", "TaskExecutor"]
