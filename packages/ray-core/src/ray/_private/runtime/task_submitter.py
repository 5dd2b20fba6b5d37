"""Owner side of normal tasks: resolve dependencies, lease workers, push tasks.

Tasks wait in the owner until their owned arguments exist (small ones are then
inlined). Ready tasks queue per resource shape; the owner asks its raylet for
worker leases (following spillbacks to other raylets), keeps each lease for
many tasks, and pushes tasks straight to the leased worker. How many tasks ride
in flight to one worker adapts to how long the function takes, so no-op tasks
stream while long tasks spread over all workers. Idle leases go back to the
raylet after ``idle_lease_timeout_s``.
"""

from __future__ import annotations

import logging
import threading
from collections import deque

from ray._private.rpc import RemoteError
from ray.exceptions import (
    RayConnectionError,
    TaskPlacementGroupRemoved,
    TaskUnschedulableError,
    WorkerCrashedError,
)

logger = logging.getLogger(__name__)

# Spec field positions (see task_executor for the consumer side).
TASK_ID, JOB, FUNCTION_ID, NAME, ARGS, KWARG_NAMES, NUM_RETURNS, OWNER, OPTIONS = range(9)
RESOURCE_IDS, KIND, ACTOR_ID, METHOD, SEQ = range(9, 14)
# When the owner submitted the task (wall clock), or None with profiling off: the
# executing worker's timeline span carries it, so owners record nothing per task.
SUBMITTED = 14
KIND_NORMAL, KIND_ACTOR_CREATION, KIND_ACTOR_METHOD = 0, 1, 2


class PendingTask:
    __slots__ = ("spec", "shape_key", "retries_left", "return_ids", "arg_refs", "on_done",
                 "runtime_env")

    def __init__(self, spec, shape_key, retries_left, return_ids, arg_refs, on_done=None,
                 runtime_env=None):
        self.spec = spec
        # A runtime_env.LeaseEnv, or None: leases for it go to workers dedicated to it.
        self.runtime_env = runtime_env
        self.shape_key = shape_key
        self.retries_left = retries_left
        self.return_ids = return_ids
        self.arg_refs = arg_refs  # owned/borrowed ids pinned while the task is pending
        self.on_done = on_done  # called with (task, results, error) for actor creation


class Lease:
    __slots__ = (
        "worker_id", "peer", "raylet", "resource_ids", "node_id", "inflight",
        "idle_timer", "dead", "address",
    )

    def __init__(self, worker_id, peer, raylet, resource_ids, node_id, address):
        self.worker_id = worker_id
        self.peer = peer
        self.raylet = raylet
        self.resource_ids = resource_ids
        self.node_id = node_id
        self.inflight: dict[bytes, PendingTask] = {}
        self.idle_timer = None
        self.dead = False
        self.address = address


class ShapeQueue:
    def __init__(self, shape: dict, runtime_env=None):
        self.shape = shape
        self.runtime_env = runtime_env
        self.strategy = None  # None, "SPREAD" or a NodeAffinitySchedulingStrategy
        self.pending: deque[PendingTask] = deque()
        self.leases: dict[bytes, Lease] = {}
        self.lease_requests = 0
        self.warned_infeasible = False


class TaskSubmitter:
    def __init__(self, core):
        self.core = core
        self.cfg = core.config
        self.lock = threading.RLock()
        self.queues: dict[tuple, ShapeQueue] = {}
        # Average run time per function: decides how many of its tasks may queue at
        # one worker (unknown functions get one at a time, so slow tasks spread out).
        self.fn_seconds: dict[bytes, float] = {}

    # -- submission ------------------------------------------------------------
    def submit(self, task: PendingTask, shape: dict, deps: list[bytes], strategy=None) -> None:
        if deps:
            self.core.memory_store.on_ready(deps,
                                            lambda: self._deps_ready(task, shape, strategy))
        else:
            self._enqueue(task, shape, strategy)

    def _deps_ready(self, task: PendingTask, shape: dict, strategy) -> None:
        self.core.inline_resolved_args(task.spec)
        self._enqueue(task, shape, strategy)

    def _enqueue(self, task: PendingTask, shape: dict, strategy=None) -> None:
        env = task.runtime_env
        key = task.shape_key if env is None else (task.shape_key, env.key)
        with self.lock:
            q = self.queues.get(key)
            if q is None:
                q = self.queues[key] = ShapeQueue(shape, env)
                q.strategy = strategy
            q.pending.append(task)
            self._dispatch(q)

    def _depth(self, task: PendingTask) -> int:
        avg = self.fn_seconds.get(task.spec[FUNCTION_ID])
        if avg is None:
            return 1
        depth = int(self.cfg.pipeline_target_s / max(avg, 1e-6))
        return max(1, min(self.cfg.max_tasks_in_flight_per_worker, depth))

    def _dispatch(self, q: ShapeQueue) -> None:
        """Push pending tasks to leased workers with room; request leases for the rest."""
        if q.pending and q.leases:
            batches: dict[bytes, list] = {}
            leases = sorted(q.leases.values(), key=lambda lease: len(lease.inflight))
            progress = True
            while q.pending and progress:
                progress = False
                for lease in leases:
                    if not q.pending:
                        break
                    if lease.dead or len(lease.inflight) >= self._depth(q.pending[0]):
                        continue
                    task = q.pending.popleft()
                    lease.inflight[task.spec[TASK_ID]] = task
                    if lease.idle_timer is not None:
                        self.core.loop.cancel(lease.idle_timer)
                        lease.idle_timer = None
                    spec = task.spec
                    spec[RESOURCE_IDS] = lease.resource_ids
                    batches.setdefault(lease.worker_id, []).append(spec)
                    progress = True
            for worker_id, specs in batches.items():
                lease = q.leases[worker_id]
                try:
                    lease.peer.notify("push_tasks", specs)
                except RayConnectionError:
                    pass  # the close callback requeues them
        wanted = min(len(q.pending), self.cfg.max_pending_lease_requests)
        while q.lease_requests < wanted:
            q.lease_requests += 1
            if q.strategy is None:
                self._request_lease(q, self.core.raylet, spilled=False)
            else:
                self._start_lease(q)
                if not q.pending:  # it failed them (hard affinity to a dead node)
                    break

    # -- leases ------------------------------------------------------------------
    def _start_lease(self, q: ShapeQueue) -> None:
        """Ask the raylet the queue's strategy names (ours by default) for a lease."""
        try:
            raylet, spilled = first_raylet(self.core, q.strategy)
        except TaskUnschedulableError as exc:
            with self.lock:
                q.lease_requests -= 1
                self._fail_pending(q, exc)
            return
        self._request_lease(q, raylet, spilled)

    def _request_lease(self, q: ShapeQueue, raylet, spilled: bool) -> None:
        env = () if q.runtime_env is None else (False, None, q.runtime_env.wire())
        if q.strategy == "SPREAD":  # (detached, strategy[, runtime_env])
            env = (False, "SPREAD", *env[2:])
        fut = raylet.call(
            "request_lease", q.shape, self.core.job_id_bytes, False, spilled,
            self.core.owner_address(), *env,
        )
        fut.add_done_callback(lambda f: self._on_lease_reply(q, raylet, f))

    def _on_lease_reply(self, q: ShapeQueue, raylet, fut) -> None:
        try:
            reply = fut.result()
        except (RemoteError, RayConnectionError) as exc:
            if raylet is not self.core.raylet and not self.core.shutting_down:
                # A remote raylet went away (its node died): ask our own raylet again
                # (or fail, if the task must run on that node).
                self.core.loop.call_later(0.1, self._start_lease, q)
                return
            with self.lock:
                q.lease_requests -= 1
                if self.core.shutting_down:
                    return
                logger.warning("worker lease request failed: %s", exc)
                self._fail_pending(q, exc)
            return
        if "spillback" in reply:
            target = reply["spillback"]
            try:
                other = self.core.raylet_peer_for(target)
            except Exception as exc:
                logger.warning("cannot reach raylet %s for spillback: %s", target, exc)
                # Ask our raylet afresh (not as a spilled request: one that cannot run
                # there would then stay queued even after a node that fits joins).
                self.core.loop.call_later(0.1, self._request_lease, q, self.core.raylet, False)
                return
            self._request_lease(q, other, spilled=True)
            return
        if "infeasible" in reply:
            # The raylet keeps the request queued; it answers again when a node fits.
            return
        if "placement_group_removed" in reply:
            with self.lock:
                q.lease_requests -= 1
                self._fail_pending(q, TaskPlacementGroupRemoved(reply["placement_group_removed"]))
            return
        if "runtime_env_error" in reply:
            from ray.exceptions import RuntimeEnvSetupError

            with self.lock:
                q.lease_requests -= 1
                self._fail_pending(q, RuntimeEnvSetupError(reply["runtime_env_error"]))
            return
        worker_id = reply["worker_id"]
        try:
            peer = self.core.connect_worker(reply["address"], self._on_worker_lost)
        except Exception as exc:
            logger.warning("cannot connect to leased worker: %s", exc)
            raylet.notify("return_lease", worker_id, True)
            with self.lock:
                q.lease_requests -= 1
                self._dispatch(q)
            return
        lease = Lease(worker_id, peer, raylet, reply.get("resource_ids"), reply.get("node_id"),
                      reply["address"])
        peer.context["lease"] = (q, lease)
        with self.lock:
            q.lease_requests -= 1
            if not q.pending:
                self._return_lease(q, lease)
                return
            q.leases[worker_id] = lease
            self._dispatch(q)

    def _return_lease(self, q: ShapeQueue, lease: Lease, kill: bool = False) -> None:
        q.leases.pop(lease.worker_id, None)
        lease.dead = True
        try:
            lease.raylet.notify("return_lease", lease.worker_id, kill)
        except RayConnectionError:
            pass
        lease.peer.context.pop("lease", None)

    def _idle_check(self, q: ShapeQueue, lease: Lease) -> None:
        with self.lock:
            lease.idle_timer = None
            if not lease.inflight and not lease.dead and lease.worker_id in q.leases:
                self._return_lease(q, lease)

    def reclaim(self, worker_id: bytes) -> None:
        """The raylet needs this worker back: return it if it is idle."""
        with self.lock:
            for q in self.queues.values():
                lease = q.leases.get(worker_id)
                if lease is not None and not lease.inflight:
                    self._return_lease(q, lease)

    # -- completion ---------------------------------------------------------------
    def on_tasks_done(self, peer, done: list) -> None:
        ctx = peer.context.get("lease")
        finished = []
        with self.lock:
            for item in done:
                task = None
                if ctx is not None:
                    q, lease = ctx
                    task = lease.inflight.pop(item[0], None)
                    if task is not None:
                        fid = task.spec[FUNCTION_ID]
                        avg = self.fn_seconds.get(fid)
                        duration = item[2]
                        self.fn_seconds[fid] = duration if avg is None else 0.8 * avg + 0.2 * duration
                finished.append((task, item))
            if ctx is not None:
                q, lease = ctx
                if lease.worker_id in q.leases:
                    if q.pending:
                        self._dispatch(q)
                    elif not lease.inflight and lease.idle_timer is None:
                        lease.idle_timer = self.core.loop.call_later(
                            self.cfg.idle_lease_timeout_s, self._idle_check, q, lease
                        )
        for task, item in finished:
            self.core.store_results(item[1], task)
            if task is not None:
                self.core.task_finished(task)

    def _on_worker_lost(self, peer) -> None:
        ctx = peer.context.pop("lease", None)
        if ctx is None:
            return
        q, lease = ctx
        with self.lock:
            lease.dead = True
            q.leases.pop(lease.worker_id, None)
            lost = list(lease.inflight.values())
            lease.inflight.clear()
            retry = []
            for task in lost:
                if task.retries_left != 0 and not self.core.shutting_down:
                    task.retries_left -= 1
                    retry.append(task)
                else:
                    self.core.fail_task(task, WorkerCrashedError())
            for task in reversed(retry):
                q.pending.appendleft(task)
            if q.pending and not self.core.shutting_down:
                self._dispatch(q)

    def _fail_pending(self, q: ShapeQueue, exc) -> None:
        while q.pending:
            task = q.pending.popleft()
            self.core.fail_task(task, exc)

    def resubmit(self, task: PendingTask) -> None:
        """Run a finished task again (lineage reconstruction of a lost result)."""
        env = task.runtime_env
        q = self.queues.get(task.shape_key if env is None else (task.shape_key, env.key))
        if q is not None:  # (its key may carry a strategy marker: reuse the queue's shape)
            self._enqueue(task, q.shape, q.strategy)
        else:
            self._enqueue(task, dict(task.shape_key))

    def num_leases(self) -> int:
        with self.lock:
            return sum(len(q.leases) for q in self.queues.values())

    def return_all(self) -> None:
        with self.lock:
            for q in self.queues.values():
                for lease in list(q.leases.values()):
                    self._return_lease(q, lease)


def first_raylet(core, strategy):
    """(raylet peer, spilled) to ask first for a lease under ``strategy``.

    NodeAffinity goes straight to that node's raylet (as a spilled request, so a hard
    one is never sent on; a soft one may spill when the node is full). A dead or
    unknown node fails a hard affinity with TaskUnschedulableError; a soft one falls
    back to the local raylet."""
    node_id = getattr(strategy, "node_id", None)
    if node_id is None:
        return core.raylet, False
    from ray._private.gcs import keys

    info = core.gcs.hget_obj(keys.NODES, node_id)
    if info is not None and info.get("alive", True):
        try:
            peer = core.raylet_peer_for({"node_id": node_id,
                                         "address": [info["node_ip"], info["raylet_port"]]})
            return peer, not strategy.soft
        except (OSError, RayConnectionError):
            pass
    if strategy.soft:
        return core.raylet, False
    state = "unknown" if info is None else "dead"
    raise TaskUnschedulableError(
        f"NodeAffinitySchedulingStrategy(soft=False) names node {node_id}, which is {state}. "
        "Pick a live node (ray.nodes()) or pass soft=True to run elsewhere when it is gone.")
