"""What an owner keeps per task it submitted, until its results are gone.

While a task is pending its arguments stay pinned; once it finished, the spec of a
task whose results live in an object store is kept (lineage), with its arguments,
so a copy lost with its node can be rebuilt by running the task again. Both the
task and the actor paths report completions and failures here.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from ray._private.messages import (
    NUM_RETURNS_STREAMING,
    Inline,
    InPlasma,
    ReturnObject,
    TaskDone,
    TaskSpec,
)
from ray._private.runtime import serialization as ser
from ray._private.runtime.generator_streams import GeneratorStreams
from ray._private.runtime.objects import ObjectClient
from ray._private.runtime.reference_counter import ReferenceCounter
from ray._private.task_events import NoTaskEvents, TaskEventRecorder
from ray.exceptions import TaskCancelledError, WorkerCrashedError

logger = logging.getLogger(__name__)

DoneCallback = Callable[["PendingTask", "list[ReturnObject] | None", "BaseException | None"],
                        None]


class PendingTask:
    """A submitted task as its owner tracks it (the spec, retries, what it pins)."""

    __slots__ = ("spec", "shape_key", "retries_left", "return_ids", "arg_refs", "on_done",
                 "runtime_env", "retry_exceptions", "cancelled", "parent_task_id",
                 "oom_retries_left", "oom_kills")

    def __init__(self, spec: TaskSpec, shape_key: tuple | None, retries_left: int,
                 return_ids: list[bytes], arg_refs: list[bytes],
                 on_done: DoneCallback | None = None, runtime_env=None,
                 retry_exceptions: bool | tuple = False, parent_task_id: bytes | None = None):
        self.spec = spec
        # A runtime_env.LeaseEnv, or None: leases for it go to workers dedicated to it.
        self.runtime_env = runtime_env
        self.shape_key = shape_key
        self.retries_left = retries_left  # -1: unlimited
        self.return_ids = return_ids
        self.arg_refs = arg_refs  # owned/borrowed ids pinned while the task is pending
        self.on_done = on_done  # called with (task, returns, error): actor creation
        # Retry when the task raises: True (any Exception) or these exception types.
        self.retry_exceptions = retry_exceptions
        self.cancelled = False  # ray.cancel: no retry, its error is TaskCancelledError
        self.parent_task_id = parent_task_id  # the task that submitted it (recursive cancel)
        # Kills by the memory monitor draw on their own budget (config task_oom_retries,
        # taken at the first such kill: None until then), never on retries_left; a task
        # submitted with max_retries=0 gets none (as Ray).
        self.oom_retries_left: int | None = None if retries_left != 0 else 0
        self.oom_kills = 0


def retries_exception(task: PendingTask, done: TaskDone) -> bool:
    """Whether ``done`` reports an exception ``task`` should be run again for
    (``retry_exceptions`` covers it and retries are left): the owner's decision, for
    normal tasks and actor calls alike."""
    policy = task.retry_exceptions
    if not policy or task.retries_left == 0 or task.cancelled or not done.returns:
        return False
    value = done.returns[0].value
    if type(value) is not Inline or not ser.is_error(value.metadata):
        return False
    try:
        error = ser.load_error(value.data)
    except Exception:  # noqa: BLE001 - its class does not load here: not retried
        return False
    if isinstance(error, TaskCancelledError | WorkerCrashedError):
        return False
    cause = getattr(error, "cause", None)
    if not isinstance(policy, tuple):  # True
        return isinstance(cause if cause is not None else error, Exception)
    return isinstance(error, policy) or isinstance(cause, policy)


class TaskLedger:
    def __init__(self, objects: ObjectClient, refs: ReferenceCounter,
                 generators: GeneratorStreams, task_events: TaskEventRecorder | None = None):
        self._objects = objects
        self._refs = refs
        self._generators = generators
        self._task_events = NoTaskEvents() if task_events is None else task_events
        self._lineage: dict[bytes, PendingTask] = {}  # task id -> finished task
        self._lock = threading.Lock()

    def completed(self, task: PendingTask | None, returns: list[ReturnObject],
                  keep_lineage: bool = True, generator_items: int | None = None) -> None:
        """A task's results arrived (``task`` None: a result of a task we forgot)."""
        store = self._objects.store_value
        if task is not None and task.spec.num_returns < 0 and returns:
            returns = self._generators.completed(task.spec.task_id, task.spec.num_returns,
                                                 returns, generator_items)
        for ret in returns:
            if keep_lineage and task is not None and task.retries_left != 0 \
                    and type(ret.value) is InPlasma:
                # Keep the spec (and its arguments) so a lost copy can be rebuilt.
                with self._lock:
                    self._lineage[ret.object_id[:16]] = task
            store(ret.object_id, ret.value)
        if task is not None and task.arg_refs:
            self.finished(task)

    def finished(self, task: PendingTask) -> None:
        if not task.arg_refs:
            return
        with self._lock:
            kept = task.spec.task_id in self._lineage
        if not kept:
            self._refs.remove_submitted(task.arg_refs)

    def failed(self, task: PendingTask, error: BaseException) -> None:
        if task.spec.enable_task_events:
            self._task_events.failed(task.spec.task_id, error)
        if task.spec.num_returns == NUM_RETURNS_STREAMING:
            small = ser.serialize_error(error)
            self._generators.failed(task.spec.task_id, Inline(small.metadata, small.data))
        self._objects.store_error(task.return_ids, error)
        self.finished(task)
        if task.on_done is not None:
            task.on_done(task, None, error)

    def forget(self, object_id: bytes) -> None:
        """An object was freed: drop its task's lineage once none of its returns is used."""
        with self._lock:
            task = self._lineage.get(object_id[:16])
            if task is None or any(self._refs.is_tracked(o) for o in task.return_ids):
                return
            del self._lineage[object_id[:16]]
        if task.arg_refs:
            self._refs.remove_submitted(task.arg_refs)

    def lost_on_node(self, node_id: bytes) -> list[PendingTask]:
        """Objects stored on a dead node: the tasks to run again to rebuild them (the
        rest are marked lost)."""
        rerun: dict[bytes, PendingTask] = {}
        for oid in self._objects.drop_node(node_id):
            with self._lock:
                task = self._lineage.get(oid[:16])
            if task is not None and task.spec.task_id in rerun:
                continue
            if task is not None and task.retries_left != 0:
                task.retries_left -= 1
                logger.info("rebuilding %s (its node died) by re-running %s",
                            oid.hex(), task.spec.name)
                # Drop the other returns too: they are recomputed together.
                for other in task.return_ids:
                    self._objects.delete(other)
                rerun[task.spec.task_id] = task
            elif self._refs.is_tracked(oid):
                self._objects.store_lost(
                    oid, f"its only copy was on node {node_id.hex()[:8]}, which died")
        return list(rerun.values())


__all__ = ["PendingTask", "TaskLedger", "retries_exception"]
