"""Owner side of normal tasks: wait for dependencies, lease workers, push tasks.

Tasks wait in the owner until their owned arguments exist (small ones are then
inlined). Ready tasks queue per resource shape; each queue asks the ``LeaseClient``
for workers, keeps each lease for many tasks, and pushes tasks straight to the
leased worker. How many tasks ride in flight to one worker adapts to how long the
function takes, so no-op tasks stream while long tasks spread over all workers.
Idle leases go back to the raylet after ``idle_lease_timeout_s``.

A task that raised is run again when its ``retry_exceptions`` covers the error and
retries are left (the decision in ``tasks_done``, before ``TaskLedger.completed``).
``ray.cancel`` fails a task still waiting for its arguments or queued here with
``TaskCancelledError``; one pushed to a worker gets a ``CancelTask`` there (the worker
interrupts it, or with ``force`` exits), and is never retried.
"""

from __future__ import annotations

import logging
import threading
from collections import deque

from ray._private.config import RayConfig as Config
from ray._private.messages import CancelTask, TaskDone, WorkerKilled
from ray._private.rpc import RpcPeer
from ray._private.runtime.lease_client import Lease, LeaseClient
from ray._private.runtime.objects import ObjectClient
from ray._private.runtime.task_ledger import PendingTask, TaskLedger, retries_exception
from ray._private.strategies import NodeAffinitySchedulingStrategy
from ray._private.task_events import NoTaskEvents, TaskEventRecorder
from ray._private.transport import EventLoop
from ray.exceptions import (
    OutOfMemoryError,
    RayConnectionError,
    TaskCancelledError,
    WorkerCrashedError,
)

logger = logging.getLogger(__name__)

# A queue whose lease request is not granted this soon makes other queues return their
# idle leases (see TaskSubmitter._reclaim_idle_for).
_RECLAIM_AFTER_S = 0.02
# Tasks this short (on average) may wait in pairs at busy workers (TaskSubmitter._depth).
_PAIR_UP_TO_S = 0.1


def _inflight(held: _TaskLease) -> int:
    return len(held.inflight)


class _TaskLease:
    """A leased worker running tasks of one queue.

    ``calls``: how many tasks of each ``max_calls`` function were pushed to it; the worker
    exits after ``max_calls`` of them, so the lease takes no more work once one count is
    reached (``exhausted``) and is handed back, with its resources, when it drains."""

    __slots__ = ("lease", "queue", "inflight", "idle_timer", "dead", "calls", "exhausted",
                 "node_id", "staging")

    def __init__(self, lease: Lease, queue: ShapeQueue):
        self.lease = lease
        self.queue = queue
        self.node_id = bytes.fromhex(lease.node_id)  # where its worker reads arguments
        self.inflight: dict[bytes, PendingTask] = {}
        # Tasks in ``inflight`` not pushed yet: their arguments are being pulled to the
        # worker's node (they do not count against its depth: the worker is free).
        self.staging = 0
        self.idle_timer: list | None = None
        self.dead = False
        self.calls: dict[bytes, int] | None = None
        self.exhausted = False


class ShapeQueue:
    """Tasks of one resource shape (and runtime_env) and the leases that run them."""

    def __init__(self, submitter: TaskSubmitter, shape: dict, runtime_env=None,
                 strategy=None):
        self.submitter = submitter
        self.shape = shape
        self.runtime_env = runtime_env
        self.strategy = strategy  # None, "SPREAD" or a NodeAffinitySchedulingStrategy
        self.pending: deque[PendingTask] = deque()
        self.leases: dict[bytes, _TaskLease] = {}
        self.lease_requests = 0
        # Free room for this shape elsewhere, as the last spillback reported it: that
        # many lease requests may be in flight beyond max_pending_lease_requests.
        self.room = 0

    # LeaseHandler: outcomes of this queue's lease requests (on the I/O thread).
    def lease_granted(self, lease: Lease) -> None:
        self.submitter._lease_granted(self, lease)

    def lease_failed(self, error: Exception | None) -> None:
        self.submitter._lease_failed(self, error)

    def lease_spilled(self, room: int) -> None:
        self.submitter._lease_spilled(self, room)

    def lease_wanted(self) -> bool:
        # More requests in flight than queued tasks: this one would lease an idle worker.
        return len(self.pending) >= self.lease_requests


class TaskSubmitter:
    def __init__(self, *, leases: LeaseClient, ledger: TaskLedger, objects: ObjectClient,
                 loop: EventLoop, config: Config, is_shutting_down,
                 task_events: TaskEventRecorder | None = None):
        self._leases = leases
        self._ledger = ledger
        self._objects = objects
        self._loop = loop
        self._cfg = config
        self._is_shutting_down = is_shutting_down
        self._task_events = NoTaskEvents() if task_events is None else task_events
        self.lock = threading.RLock()
        self.queues: dict[tuple, ShapeQueue] = {}
        # Average run time per function: decides how many of its tasks may queue at
        # one worker (unknown functions get one at a time, so slow tasks spread out).
        self._fn_seconds: dict[bytes, float] = {}
        self._fn_depth: dict[bytes, int] = {}  # what _depth answers, kept with the average
        self._by_worker: dict[bytes, _TaskLease] = {}
        self._by_peer: dict[RpcPeer, _TaskLease] = {}
        self._awaiting_args: dict[bytes, PendingTask] = {}  # task id -> task
        # Task batches ``_dispatch`` assigned to workers, sent by ``_send`` once the lock
        # is released: a socket write under the lock drops the GIL, and a thread then
        # blocked on the lock (the caller submitting, the I/O thread handing in results)
        # waits for the writer's GIL as well (a switch interval, 5 ms, at worst). Order
        # between batches does not matter: a worker runs normal tasks in any order.
        self._outbox: deque[tuple[RpcPeer, list]] = deque()

    # -- submission ------------------------------------------------------------
    def submit(self, task: PendingTask, shape: dict, deps: list[bytes], strategy=None) -> None:
        if deps:
            with self.lock:
                self._awaiting_args[task.spec.task_id] = task
            self._objects.when_ready(deps, lambda: self._deps_ready(task, shape, strategy))
        else:
            self._enqueue(task, shape, strategy)

    def _deps_ready(self, task: PendingTask, shape: dict, strategy) -> None:
        with self.lock:
            if self._awaiting_args.pop(task.spec.task_id, None) is None:
                return  # cancelled while it waited
        self._objects.inline_resolved_args(task.spec)
        if task.spec.enable_task_events:  # PENDING_ARGS_AVAIL -> PENDING_NODE_ASSIGNMENT
            self._task_events.args_ready(task.spec.task_id)
        self._enqueue(task, shape, strategy)

    def _enqueue(self, task: PendingTask, shape: dict, strategy=None) -> None:
        env = task.runtime_env
        key = task.shape_key or () if env is None else (task.shape_key, env.key)
        with self.lock:
            q = self.queues.get(key)
            if q is None:
                q = self.queues[key] = ShapeQueue(self, shape, env, strategy)
            q.pending.append(task)
            self._dispatch(q)
        self._send()

    def _depth(self, q: ShapeQueue) -> int:
        """How many tasks of the function at the head of ``q`` may queue at one worker:
        enough for ``pipeline_target_s`` of its average run time (1 while it is unknown).
        A slower function gets 1, so its tasks spread over every worker there is, except
        one of at most ``_PAIR_UP_TO_S`` while ``q`` holds more tasks than it has workers
        and lease requests plus the free room the last spillback reported: no worker
        could take the next task sooner, so it waits at a busy one, which saves the
        round trip that would otherwise start it (at 100 nodes, 10-25 ms after each 50 ms
        task); a misjudged view costs at most one such task's time."""
        function_id = q.pending[0].spec.function_id
        depth = self._fn_depth.get(function_id, 1)
        if (depth == 1 and self._fn_seconds.get(function_id, _PAIR_UP_TO_S + 1) <= _PAIR_UP_TO_S
                and len(q.pending) > len(q.leases) + q.lease_requests + q.room):
            return 2
        return depth

    def _record_duration(self, function_id: bytes, seconds: float) -> None:
        avg = self._fn_seconds.get(function_id)
        avg = seconds if avg is None else 0.8 * avg + 0.2 * seconds
        self._fn_seconds[function_id] = avg
        depth = int(self._cfg.pipeline_target_s / max(avg, 1e-6))
        self._fn_depth[function_id] = max(1, min(self._cfg.max_tasks_in_flight_per_worker, depth))

    def _dispatch(self, q: ShapeQueue) -> None:
        """Push pending tasks to leased workers with room; request leases for the rest."""
        if q.pending and q.leases:
            batches: dict[bytes, list] = {}
            leases = list(q.leases.values())
            if len(leases) > 1:  # the least loaded first
                leases.sort(key=_inflight)
            progress = True
            while q.pending and progress:
                progress = False
                depth = self._depth(q)  # (read again below after each pop)
                for held in leases:
                    if not q.pending:
                        break
                    if held.dead or held.exhausted or len(held.inflight) - held.staging >= depth:
                        continue
                    task = q.pending.popleft()
                    if q.pending:
                        depth = self._depth(q)
                    spec = task.spec
                    if spec.max_calls:
                        self._count_call(held, spec.function_id, spec.max_calls)
                    held.inflight[spec.task_id] = task
                    if held.idle_timer is not None:
                        self._loop.cancel(held.idle_timer)
                        held.idle_timer = None
                    spec.resource_ids = held.lease.resource_ids
                    progress = True
                    if spec.args and self._stage_args(held, task):
                        continue  # pushed once its arguments are on the worker's node
                    batches.setdefault(held.lease.worker_id, []).append(spec.to_wire())
            outbox = self._outbox
            for worker_id, specs in batches.items():
                outbox.append((q.leases[worker_id].lease.worker, specs))
        wanted = min(len(q.pending), self._cfg.max_pending_lease_requests
                     + min(q.room, self._cfg.max_lease_requests_for_room))
        while q.lease_requests < wanted:
            q.lease_requests += 1
            self._request_lease(q)
            if not q.pending:  # it failed them (hard affinity to a dead node)
                break

    def _send(self) -> None:
        """Send what ``_dispatch`` queued; called by whoever dispatched, after releasing
        the lock (any thread may send another's batches: deque.popleft is atomic)."""
        outbox = self._outbox
        while outbox:
            try:
                worker, specs = outbox.popleft()
            except IndexError:  # another thread sent the last one
                return
            try:
                worker.notify("push_tasks", specs)
            except RayConnectionError:
                pass  # the close callback requeues them

    def _stage_args(self, held: _TaskLease, task: PendingTask) -> bool:
        """Ask the raylet of ``held``'s node to pull the task's arguments that are stored
        on other nodes, and push the task when they are there (Ray's raylet dispatches a
        task only once its arguments are local): meanwhile the worker's CPU runs tasks
        that are ready, instead of idling in a transfer. False: nothing to pull."""
        elsewhere = self._objects.args_stored_elsewhere(task.spec.args, held.node_id)
        if not elsewhere:
            return False
        try:
            pulled = held.lease.raylet.call("pull_objects", elsewhere)
        except RayConnectionError:
            return False  # that node is going away: its worker's loss requeues the task
        held.staging += 1
        # (under the lock: the answer must not run here if it is already in)
        self._loop.when_done(pulled, lambda f: self._args_staged(held, task, f, elsewhere))
        return True

    def _args_staged(self, held: _TaskLease, task: PendingTask, pulled, elsewhere) -> None:
        error = pulled.exception()
        if error is None:
            # The copies there stay as evictable secondary copies: the worker pins them
            # when it reads them (and pulls again what memory pressure evicted).
            try:
                held.lease.raylet.notify("release_pulled", [oid for oid, _ in elsewhere])
            except RayConnectionError:
                pass  # that node is going away, and its pins with it
        else:
            # The worker fetches them itself and reports the loss (or the owner rebuilds
            # the object) as for any argument it cannot read.
            logger.debug("pulling the arguments of %s failed: %s", task.spec.name, error)
        with self.lock:
            held.staging -= 1
            if held.dead or held.inflight.get(task.spec.task_id) is not task:
                return  # lost with its worker (and requeued there) meanwhile
            worker = held.lease.worker
        try:
            worker.notify("push_tasks", [task.spec.to_wire()])
        except RayConnectionError:
            pass  # the close callback requeues it

    @staticmethod
    def _count_call(held: _TaskLease, function_id: bytes, max_calls: int) -> None:
        calls = held.calls
        if calls is None:
            calls = held.calls = {}
        count = calls[function_id] = calls.get(function_id, 0) + 1
        if count >= max_calls:
            held.exhausted = True

    def _request_lease(self, q: ShapeQueue) -> None:
        strategy = q.strategy
        self._leases.request(
            q.shape, q, self._on_worker_lost, spread=strategy == "SPREAD",
            affinity=strategy if isinstance(strategy, NodeAffinitySchedulingStrategy) else None,
            runtime_env=None if q.runtime_env is None else q.runtime_env.wire(),
            retriable=self._oom_retriable(q.pending[0]) if q.pending else None)
        if len(self.queues) > 1:
            self._loop.call_later(_RECLAIM_AFTER_S, self._reclaim_idle_for, q)

    def _oom_retriable(self, task: PendingTask) -> bool:
        """Whether ``task`` runs again if the memory monitor kills it (its lease says so,
        so the monitor kills such work first)."""
        left = task.oom_retries_left
        return left != 0 if left is not None else self._cfg.task_oom_retries != 0

    def _reclaim_idle_for(self, q: ShapeQueue) -> None:
        """``q`` still waits for a worker: hand back other queues' idle leases now rather
        than after their idle timeout, since they may hold the resources it needs (tasks of
        many shapes would otherwise wait ``idle_lease_timeout_s`` per shape)."""
        with self.lock:
            if not q.pending or q.leases or not q.lease_requests:
                return
            for other in self.queues.values():
                if other is q or other.pending:
                    continue
                for held in list(other.leases.values()):
                    if not held.inflight and not held.dead:
                        if held.idle_timer is not None:
                            self._loop.cancel(held.idle_timer)
                            held.idle_timer = None
                        self._return_lease(held)

    # -- lease outcomes -------------------------------------------------------------
    def _lease_granted(self, q: ShapeQueue, lease: Lease) -> None:
        held = _TaskLease(lease, q)
        with self.lock:
            q.lease_requests -= 1
            if not q.pending:
                lease.give_back()
                return
            q.leases[lease.worker_id] = held
            self._by_worker[lease.worker_id] = held
            self._by_peer[lease.worker] = held
            self._dispatch(q)
        self._send()

    def _lease_spilled(self, q: ShapeQueue, room: int) -> None:
        """A request was sent on to a free node: with room for more out there, ask for
        more leases at once (a large cluster is reached in one round of requests)."""
        with self.lock:
            grew = room > q.room
            q.room = room
            if grew and q.pending:
                self._dispatch(q)
        self._send()

    def _lease_failed(self, q: ShapeQueue, error: Exception | None) -> None:
        with self.lock:
            q.lease_requests -= 1
            if error is not None:
                self._fail_pending(q, error)

    def _return_lease(self, held: _TaskLease, kill: bool = False) -> None:
        held.queue.leases.pop(held.lease.worker_id, None)
        self._by_worker.pop(held.lease.worker_id, None)
        self._by_peer.pop(held.lease.worker, None)
        held.dead = True
        held.lease.give_back(kill)

    def _idle_check(self, held: _TaskLease) -> None:
        with self.lock:
            held.idle_timer = None
            if not held.inflight and not held.dead:
                self._return_lease(held)

    def reclaim(self, worker_id: bytes) -> None:
        """The raylet needs this worker back: return it if it is idle."""
        with self.lock:
            held = self._by_worker.get(worker_id)
            if held is not None and not held.inflight:
                self._return_lease(held)

    # -- completion ---------------------------------------------------------------
    def runs_tasks_on(self, peer: RpcPeer) -> bool:
        """Whether ``peer`` is a worker leased for tasks (its results come here)."""
        return peer in self._by_peer

    def tasks_done(self, peer: RpcPeer, done: list[TaskDone]) -> None:
        held = self._by_peer.get(peer)
        finished = []
        retry = []
        with self.lock:
            for item in done:
                task = held.inflight.pop(item.task_id, None) if held is not None else None
                if task is not None:
                    self._record_duration(task.spec.function_id, item.duration_s)
                    if task.retry_exceptions and retries_exception(task, item):
                        if task.retries_left > 0:
                            task.retries_left -= 1
                        retry.append(task)
                        continue
                finished.append((task, item))
            if held is not None and not held.dead:
                q = held.queue
                if held.exhausted and not held.inflight:
                    # Its worker exits after its last max_calls task: the raylet takes it
                    # back (and frees its resources) instead of leasing it again.
                    self._return_lease(held, kill=True)
                if q.pending:
                    self._dispatch(q)
                elif not held.inflight and held.idle_timer is None:
                    held.idle_timer = self._loop.call_later(
                        self._cfg.idle_lease_timeout_s, self._idle_check, held)
        self._send()
        for task in retry:
            logger.info("task %s raised an exception its retry_exceptions covers: running it "
                        "again (%s retries left)", task.spec.name, task.retries_left)
            self.resubmit(task)
        for task, item in finished:
            self._ledger.completed(task, item.returns, generator_items=item.generator_items)

    def _on_worker_lost(self, peer: RpcPeer) -> None:
        with self.lock:
            held = self._by_peer.pop(peer, None)
            if held is None:
                return
            self._by_worker.pop(held.lease.worker_id, None)
            q = held.queue
            held.dead = True
            q.leases.pop(held.lease.worker_id, None)
            lost = list(held.inflight.values())
            held.inflight.clear()
            cancelled = [task for task in lost if task.cancelled]  # ray.cancel(force=True)
            lost = [task for task in lost if not task.cancelled]
            shutting_down = self._is_shutting_down()
            if q.pending and not shutting_down:
                self._dispatch(q)
        self._send()
        for task in cancelled:
            self._ledger.failed(task, TaskCancelledError(task.spec.task_id.hex()))
        if not lost:
            return
        if shutting_down:
            for task in lost:
                self._ledger.failed(task, WorkerCrashedError())
            return
        # Retry or fail by the cause its raylet recorded: a kill by the memory monitor
        # draws on the OOM budget, anything else on max_retries.
        held.lease.ask_death_cause(lambda cause: self._retry_or_fail(q, lost, cause))

    def _retry_or_fail(self, q: ShapeQueue, lost: list[PendingTask],
                       cause: WorkerKilled | None) -> None:
        oom_message = (cause.message if cause is not None
                       and cause.reason == WorkerKilled.OUT_OF_MEMORY else None)
        retry: list[PendingTask] = []
        delayed: list[tuple[PendingTask, float]] = []
        failed: list[tuple[PendingTask, BaseException]] = []
        with self.lock:
            for task in lost:
                if task.cancelled:
                    failed.append((task, TaskCancelledError(task.spec.task_id.hex())))
                elif oom_message is not None:
                    if task.oom_retries_left is None:
                        task.oom_retries_left = self._cfg.task_oom_retries
                    if task.oom_retries_left == 0:
                        failed.append((task, OutOfMemoryError(oom_message)))
                        continue
                    if task.oom_retries_left > 0:
                        task.oom_retries_left -= 1
                    delay_ms = min(self._cfg.task_oom_retry_delay_base_ms * 2**task.oom_kills,
                                   60_000)
                    task.oom_kills += 1
                    delayed.append((task, delay_ms / 1000))
                elif task.retries_left != 0:
                    task.retries_left -= 1
                    retry.append(task)
                else:
                    failed.append((task, WorkerCrashedError()))
            for task in reversed(retry):
                q.pending.appendleft(task)
            if retry:
                self._dispatch(q)
        self._send()
        for task, error in failed:
            self._ledger.failed(task, error)
        for task, delay_s in delayed:
            logger.info("task %s was killed by the memory monitor; running it again in "
                        "%.1f s (%s OOM retries left)", task.spec.name, delay_s,
                        "unlimited" if task.oom_retries_left == -1 else task.oom_retries_left)
            self._loop.call_later(delay_s, self._retry_after_oom, q, task)

    def _retry_after_oom(self, q: ShapeQueue, task: PendingTask) -> None:
        if task.cancelled or self._is_shutting_down():
            self._ledger.failed(task, TaskCancelledError(task.spec.task_id.hex())
                                if task.cancelled else WorkerCrashedError())
            return
        with self.lock:
            q.pending.appendleft(task)
            self._dispatch(q)
        self._send()

    def _fail_pending(self, q: ShapeQueue, exc: BaseException) -> None:
        while q.pending:
            self._ledger.failed(q.pending.popleft(), exc)

    def resubmit(self, task: PendingTask) -> None:
        """Run a finished task again (lineage reconstruction of a lost result)."""
        env = task.runtime_env
        q = self.queues.get(task.shape_key or () if env is None else (task.shape_key, env.key))
        if q is not None:  # (its key may carry a strategy marker: reuse the queue's shape)
            self._enqueue(task, q.shape, q.strategy)
        else:
            self._enqueue(task, dict(task.shape_key or ()))

    # -- cancellation ----------------------------------------------------------------
    def cancel(self, task_id: bytes, force: bool, recursive: bool) -> bool:
        """``ray.cancel`` of a task submitted here; False if it is not one (or is done)."""
        error = TaskCancelledError(task_id.hex())
        with self.lock:
            task = self._awaiting_args.pop(task_id, None)
            if task is None:
                for q in self.queues.values():
                    for queued in q.pending:
                        if queued.spec.task_id == task_id:
                            q.pending.remove(queued)
                            task = queued
                            break
                    if task is not None:
                        break
            if task is None:
                for held in self._by_worker.values():
                    running = held.inflight.get(task_id)
                    if running is not None:
                        running.cancelled = True
                        try:
                            held.lease.worker.notify(
                                "cancel_task", CancelTask(task_id, force, recursive).to_wire())
                        except RayConnectionError:
                            pass  # its worker is gone: the loss fails it as cancelled
                        return True
                return False
            task.cancelled = True
        self._ledger.failed(task, error)
        return True

    def cancel_children(self, parent_task_id: bytes, force: bool) -> None:
        """Cancel what the task ``parent_task_id`` (run here) submitted (recursive cancel)."""
        with self.lock:
            children = [t.spec.task_id for t in self._awaiting_args.values()
                        if t.parent_task_id == parent_task_id]
            for q in self.queues.values():
                children += [t.spec.task_id for t in q.pending
                             if t.parent_task_id == parent_task_id]
            for held in self._by_worker.values():
                children += [t.spec.task_id for t in held.inflight.values()
                             if t.parent_task_id == parent_task_id]
        for task_id in children:
            self.cancel(task_id, force, recursive=True)

    def num_leases(self) -> int:
        with self.lock:
            return len(self._by_worker)

    def return_all(self) -> None:
        with self.lock:
            for held in list(self._by_worker.values()):
                self._return_lease(held)


__all__ = ["ShapeQueue", "TaskSubmitter"]
