"""The cluster runtime inside every driver and worker process: where its parts are wired.

::

    CoreWorker (implements runtime.interface.Runtime; wires the parts, owns their lifetime)
      EventLoop ─ PeerPool            sockets: listen, local raylet, workers, remote raylets
      JobState, TaskContext           the job served; the running task (written by TaskExecutor)
      MemoryStore, ReferenceCounter   owned values and why they are alive
      ObjectClient                    put / get / wait / serve get_object / encode args
      TaskLedger                      pinned args of pending tasks, lineage of finished ones
      LeaseClient                     worker leases: request, spillback, retry, fail
      TaskSubmitter                   normal tasks: queues per shape over leases
      ActorManager                    actors: creation/restarts (owner), calls (caller)
      TaskExecutor                    runs pushed tasks (workers); owns TaskContext
      Profiler, Introspection         timeline events; answers `ray memory`

Each part is handed only the collaborators it uses; none holds the CoreWorker. One
I/O thread handles every socket; user code runs on the main thread.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import time
from collections.abc import Callable
from typing import Any

import plasma
from ray._private import ids as ids_mod
from ray._private import profiling, runtime_env, task_events
from ray._private.config import RayConfig as Config
from ray._private.event_loop import LoopQueue, WaitLock
from ray._private.gcs import keys
from ray._private.gcs.jobs import mark_job_finished
from ray._private.gcs.versioned import VersionedTable
from ray._private.messages import (
    NUM_RETURNS_DYNAMIC,
    NUM_RETURNS_STREAMING,
    OwnerAddress,
    RayletAddress,
    TaskDone,
    TaskKind,
    TaskSpec,
)
from ray._private.node import socket_dir
from ray._private.object_ref import ObjectRef
from ray._private.options import DYNAMIC, STREAMING, ActorOptions, TaskOptions
from ray._private.ref_generators import ObjectRefGenerator
from ray._private.rpc import RemoteError, RpcPeer
from ray._private.runtime import cluster_info, placement_groups
from ray._private.runtime.actor_manager import ActorManager
from ray._private.runtime.context import JobState, TaskContext
from ray._private.runtime.generator_streams import GeneratorStreams
from ray._private.runtime.interface import ActorInfo, Identity, Runtime
from ray._private.runtime.introspection import Introspection
from ray._private.runtime.lease_client import LeaseClient
from ray._private.runtime.memory_store import MemoryStore
from ray._private.runtime.objects import ObjectClient
from ray._private.runtime.peers import PeerPool
from ray._private.runtime.placement_groups import PlacementGroupClient
from ray._private.runtime.profiler import Profiler
from ray._private.runtime.reference_counter import ReferenceCounter
from ray._private.runtime.task_executor import TaskExecutor
from ray._private.runtime.task_ledger import PendingTask, TaskLedger
from ray._private.runtime.task_submitter import TaskSubmitter
from ray._private.transport import EventLoop
from ray.exceptions import RayError

logger = logging.getLogger(__name__)

# The period of the reference-release timer while references are dropped, and the
# longest it backs off to while none are (see CoreWorker._periodic_drain).
_DRAIN_MIN_S = 0.01
_DRAIN_MAX_S = 0.25

MODE_DRIVER, MODE_WORKER = "driver", "worker"


def _wire_num_returns(num_returns: int | str | None) -> int:
    """A TaskSpec's num_returns: the count, or the generator markers."""
    if num_returns == STREAMING:
        return NUM_RETURNS_STREAMING
    if num_returns == DYNAMIC:
        return NUM_RETURNS_DYNAMIC
    return 1 if num_returns is None else int(num_returns)


class CoreWorker(Runtime):
    def __init__(self, *, mode: str, node: dict, job_id: ids_mod.JobID, config: Config, gcs,
                 worker_id: bytes | None = None, object_id_seed: int | None = None,
                 namespace: str = "default", detached_actors_by_default: bool = False):
        self.mode = mode
        self.node = node
        self.node_id: bytes = bytes.fromhex(node["node_id"])
        self.node_ip: str = node["node_ip"]
        self.config = config
        self.gcs = gcs
        # ray.cluster_resources() (and ray.data's executions) re-read the node table only
        # when a node joined or left, or half a heartbeat timeout after the last read.
        self._node_table = VersionedTable(keys.NODES, keys.NODES_VERSION,
                                          config.heartbeat_timeout_s / 2)
        self.worker_id = worker_id or os.urandom(20)
        self.shutting_down = False
        self.address_info: dict = {}
        self.node_processes = None  # the embedded cluster a driver started (ray.init())
        self.dashboard_process = None  # a dashboard this driver started on a joined cluster
        self._pushed_errors: list[dict] = []
        self._shutdown_hooks: list[Callable[[], None]] = []
        self._decrefs: collections.deque = collections.deque()
        is_down: Callable[[], bool] = lambda: self.shutting_down  # noqa: E731

        self.job = JobState(job_id, gcs, load_code_from_local=config.load_code_from_local,
                            object_id_seed=object_id_seed, namespace=namespace,
                            detached_actors_by_default=detached_actors_by_default)
        self.context = TaskContext(self.job.ids.next_task_id())
        self.loop = EventLoop(name=f"ray-io-{mode}", spin_s=config.io_spin_us / 1e6)
        self.loop.start()
        self.peers = PeerPool(self.loop, node_id_hex=node["node_id"], node_ip=self.node_ip,
                              worker_id=self.worker_id,
                              socket_dir=socket_dir(node["session_dir"]))
        self.address: OwnerAddress = self.peers.address
        self.raylet = self.peers.connect_raylet(node["raylet_socket"],
                                                config.gcs_connect_timeout_s, self._raylet_lost)
        if mode == MODE_DRIVER:
            os.environ.setdefault(
                "PLASMA_CLIENT_PREFAULT_BYTES", str(config.object_store_prefault_bytes))
            # In the background: ray.init returns before the driver's page tables are
            # populated (a big put in the first second populates its own pages).
            os.environ.setdefault("PLASMA_CLIENT_PREFAULT_MODE", "background")
        self.plasma = plasma.connect(node["plasma_socket"])

        self.memory_store = MemoryStore(held_lock=lambda: WaitLock(self.loop))
        self.refs = ReferenceCounter(self._on_ref_freed)
        self.objects = ObjectClient(
            memory_store=self.memory_store, refs=self.refs, store=self.plasma,
            peers=self.peers, job=self.job, context=self.context, node_id=self.node_id,
            max_inline_bytes=config.max_inline_bytes, is_worker=mode == MODE_WORKER)
        events = task_events.recorder_for(config, node_id=self.node_id,
                                          worker_id=self.worker_id)
        self.generators = GeneratorStreams(self.objects, self.refs)
        self.ledger = TaskLedger(self.objects, self.refs, self.generators, events)
        self.profiler = Profiler(gcs, enabled=config.profiling_enabled,
                                 capacity=config.max_profile_events_buffered,
                                 flush_period_s=config.task_events_flush_period_s,
                                 node_ip=self.node_ip,
                                 component=f"{mode}:{self.worker_id.hex()}",
                                 task_events=events)
        self.leases = LeaseClient(peers=self.peers, gcs=gcs, loop=self.loop,
                                  job=self.job, owner=self.address,
                                  is_shutting_down=is_down)
        self.submitter = TaskSubmitter(leases=self.leases, ledger=self.ledger,
                                       objects=self.objects, loop=self.loop, config=config,
                                       is_shutting_down=is_down, task_events=events)
        self.actors = ActorManager(
            leases=self.leases, ledger=self.ledger, objects=self.objects, peers=self.peers,
            gcs=gcs, job=self.job, context=self.context, profiler=self.profiler,
            config=config, loop=self.loop,
            is_shutting_down=is_down)
        self.executor = TaskExecutor(
            context=self.context, job=self.job, objects=self.objects, gcs=gcs,
            profiler=self.profiler, node_ip=self.node_ip, notify_owner=self._notify_owner,
            cancel_children=self.submitter.cancel_children, task_queue=LoopQueue(self.loop))
        if mode == MODE_WORKER:
            self.objects.before_wait = self.executor.send_finished
        self._placement_groups = PlacementGroupClient(
            gcs=gcs, head_raylet=self.peers.raylet_for, objects=self.objects, job=self.job)
        self.introspection = Introspection(
            gcs=gcs, refs=self.refs, objects=self.objects, context=self.context, job=self.job,
            address=self.address, node_id=self.node_id, mode=mode, is_shutting_down=is_down)
        self._register_handlers()
        gcs.subscribe_obj(keys.CHANNEL_NODES, self._on_node_event,
                          on_resync=self._read_dead_nodes)
        self.introspection.install()
        self._drain_period = _DRAIN_MIN_S
        self.loop.call_later(_DRAIN_MIN_S, self._periodic_drain)

    # -- wiring ---------------------------------------------------------------------
    def _register_handlers(self) -> None:
        handle = self.peers.handle
        refs = self.refs
        handle("push_tasks", self.executor.push)
        handle("cancel_task", self.executor.cancel)
        handle("tasks_done", self._on_tasks_done)
        handle("generator_item", self.generators.item_arrived)
        handle("generator_consumed", self.executor.generator_consumed)
        handle("get_object", self.objects.serve_get_object)
        handle("add_borrower", lambda peer, oid, who: refs.add_borrower(oid, who))
        handle("remove_borrower", lambda peer, oid, who: refs.remove_borrower(oid, who))
        handle("lease_reclaim", lambda peer, worker_id: self.submitter.reclaim(worker_id))
        handle("exit", self._handle_exit)
        handle("exit_if_unowned", lambda peer: not self.owns_anything())
        handle("ping", lambda peer: "pong")

    def owns_anything(self) -> bool:
        """Whether ending this process would end an actor or lose an object it owns (as
        Ray, its raylet does not end such an idle worker: ``exit_if_unowned``)."""
        return self.actors.owns_live() or self.refs.owns_any()

    def _on_tasks_done(self, peer: RpcPeer, done: list) -> None:
        results = [TaskDone.from_wire(d) for d in done]
        if self.submitter.runs_tasks_on(peer):
            self.submitter.tasks_done(peer, results)
        else:
            self.actors.tasks_done(peer, results)

    def _notify_owner(self, owner: OwnerAddress, method: str, arg: Any) -> None:
        self.peers.connect_worker(owner).notify(method, arg)

    def _raylet_lost(self, peer: RpcPeer) -> None:
        if not self.shutting_down:
            logger.error("lost the connection to the local raylet")
            if self.mode == MODE_WORKER:
                os._exit(1)

    def _handle_exit(self, peer: RpcPeer) -> None:
        if self.mode == MODE_WORKER:
            self.executor.stop()

    def _on_ref_freed(self, object_id: bytes, owned: bool, owner) -> None:
        self.ledger.forget(object_id)
        self.objects.free(object_id, owned, self._free_remote)

    def _free_remote(self, node_id: bytes, object_id: bytes) -> None:
        info = self.gcs.hget_obj(keys.NODES, node_id.hex())
        if info and info.get("alive", True):
            raylet = self.peers.raylet_for(RayletAddress.from_node_info(node_id.hex(), info))
            raylet.notify("free_objects", [object_id])

    def _on_node_event(self, _channel, msg: dict) -> None:
        # While shutting down, our own raylet's exit notice is no reason to rebuild.
        if msg.get("alive", True) or self.shutting_down:
            return
        for task in self.ledger.lost_on_node(bytes.fromhex(msg["node_id"])):
            self.submitter.resubmit(task)

    def _read_dead_nodes(self) -> None:
        # After a pub/sub reconnect: a death announced meanwhile was lost, and the node
        # table has it. Handling a death twice is harmless (nothing is left on the node).
        for node_id, info in self.gcs.hgetall_obj(keys.NODES).items():
            if not info.get("alive", True):
                self._on_node_event(None, {"node_id": node_id, "alive": False})

    # -- references ------------------------------------------------------------------
    def add_local_ref(self, object_id: bytes, owner: OwnerAddress | None) -> None:
        if owner is not None and owner.worker_id == self.worker_id:
            owner = None
        self.refs.add_local(object_id, owner)

    def remove_local_ref(self, object_id: bytes) -> None:
        # Called from ObjectRef.__del__, i.e. whenever the garbage collector runs,
        # possibly while this very thread holds one of our locks: only queue it
        # (deque.append is atomic) and let _drain_decrefs do the work outside.
        self._decrefs.append(object_id)

    def _drain_decrefs(self) -> None:
        queue = self._decrefs
        while queue:
            try:
                item = queue.popleft()
            except IndexError:
                return
            if type(item) is bytes:
                self.refs.remove_local(item)
            else:
                item()

    def _defer(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` soon, outside any lock (for __del__ hooks)."""
        self._decrefs.append(fn)

    def _periodic_drain(self) -> None:
        """Release what ``__del__`` hooks queued. Every 10 ms while references are being
        dropped; after each drain that found nothing the period doubles, up to
        ``_DRAIN_MAX_S``: an idle process then wakes 4 times a second, not 100 (at 100
        idle workers on one machine the 10 ms timer alone cost half a core). A hook
        cannot wake the loop itself: it may run inside the loop's own locking."""
        if self.shutting_down:
            return
        if self._decrefs:
            try:
                self._drain_decrefs()
            except Exception:
                logger.exception("releasing references failed")
            self._drain_period = _DRAIN_MIN_S
        else:
            self._drain_period = min(self._drain_period * 2, _DRAIN_MAX_S)
        self.loop.call_later(self._drain_period, self._periodic_drain)

    def owner_address(self) -> OwnerAddress:
        return self.address

    # -- objects ----------------------------------------------------------------------
    def put(self, value: Any) -> ObjectRef:
        self._drain_decrefs()  # free what the program dropped before allocating more
        return self.objects.put(value)

    def get(self, refs: list[ObjectRef], timeout_s: float | None) -> list:
        if self._decrefs:  # (the timer may be backed off: release before blocking)
            self._drain_decrefs()
        return self.objects.get(refs, timeout_s)

    def wait(self, refs: list[ObjectRef], num_returns: int, timeout_s: float | None,
             fetch_local: bool = True) -> tuple[list[ObjectRef], list[ObjectRef]]:
        return self.objects.wait(refs, num_returns, timeout_s, fetch_local)

    def as_future(self, ref: ObjectRef):
        return self.objects.as_future(ref)

    # -- tasks ------------------------------------------------------------------------
    def export_function(self, fn: Any) -> bytes:
        return self.job.functions.export(fn)

    def _lease_env(self, opts: TaskOptions | ActorOptions):
        if opts.runtime_env is None and not self.job.runtime_env:
            return None
        return runtime_env.for_submission(
            self.job.runtime_env, opts.runtime_env, opts, owner_id=self.worker_id,
            gcs=self.gcs, max_bytes=self.config.runtime_env_max_package_bytes)

    def submit_task(self, function_id: bytes, name: str, args: tuple, kwargs: dict,
                    opts: TaskOptions) -> list[ObjectRef]:
        if self._decrefs:
            self._drain_decrefs()
        encoded = self.objects.encode_args(args, kwargs, name)
        task_id = self.job.ids.next_task_id()
        running_in = self.context.placement_group
        if running_in is None and opts.strategy() is None:
            strategy = group = None  # no placement group involved: nothing to resolve
        else:
            placed = placement_groups.place(opts, running_in)
            opts, strategy, group = placed.opts, placed.strategy, placed.group
        num_returns = _wire_num_returns(opts.num_returns)
        spec = TaskSpec(
            task_id=task_id, job_id=self.job.hex, function_id=function_id, name=name,
            args=encoded.args, kwarg_names=encoded.kwarg_names, num_returns=num_returns,
            owner=self.address, kind=TaskKind.NORMAL, submitted_at=self.profiler.submit_stamp(),
            max_calls=opts.max_calls, placement_group=group,
            enable_task_events=opts.enable_task_events,
            generator_backpressure=opts.generator_backpressure()
            if num_returns == NUM_RETURNS_STREAMING else 0,
        )
        refs = self.objects.new_return_refs(task_id, num_returns)
        task = PendingTask(spec, opts.shape_key(), opts.max_retries,
                           [r.binary() for r in refs], encoded.pinned,
                           runtime_env=self._lease_env(opts),
                           retry_exceptions=opts.retry_exceptions,
                           parent_task_id=self.context.task_id
                           if self.context.running_task() else None)
        if opts.enable_task_events:
            self.profiler.task_events.submitted(
                task_id, name=name, kind=TaskKind.NORMAL, job_hex=self.job.hex, actor_id=None,
                parent_task_id=self.context.task_id, waits_for_args=bool(encoded.deps))
        if num_returns == NUM_RETURNS_STREAMING:
            self.generators.open(task_id, spec.generator_backpressure)
            refs = [ObjectRefGenerator(refs[0], self)]  # type: ignore[list-item]
        self.submitter.submit(task, opts.resource_shape(), encoded.deps, strategy)
        return refs

    def create_actor(self, class_id: bytes, cls: type, methods: dict, args: tuple,
                     kwargs: dict, opts: ActorOptions) -> bytes:
        return self.actors.create(class_id, cls, methods, args, kwargs, opts)

    def submit_actor_task(self, actor_id: bytes, method: str, args: tuple, kwargs: dict,
                          num_returns: int | str, enable_task_events: bool = True, *,
                          name: str | None = None, concurrency_group: str | None = None,
                          retry_exceptions: bool | tuple = False,
                          max_task_retries: int | None = None) -> list[ObjectRef]:
        n = _wire_num_returns(num_returns)
        refs = self.actors.submit(actor_id, method, args, kwargs, n, enable_task_events,
                                  name=name, concurrency_group=concurrency_group,
                                  retry_exceptions=retry_exceptions,
                                  max_task_retries=max_task_retries)
        if n == NUM_RETURNS_STREAMING:
            self.generators.open(refs[0].task_id())
            return [ObjectRefGenerator(refs[0], self)]  # type: ignore[list-item]
        return refs

    # -- generators ---------------------------------------------------------------------
    def next_generator_item(self, generator_id: bytes, index: int,
                            timeout_s: float | None) -> ObjectRef:
        return self.generators.next_item(generator_id, index, timeout_s)

    def generator_item_ready(self, generator_id: bytes, index: int) -> bool:
        return self.generators.item_ready(generator_id, index)

    def generator_exhausted(self, generator_id: bytes, index: int) -> bool:
        return self.generators.exhausted(generator_id, index)

    def release_generator(self, generator_id: bytes) -> None:
        self._defer(lambda: self.generators.release(generator_id))

    def actor_handle_created(self, actor_id: bytes) -> None:
        if self.actors.handle_created(actor_id):  # the first of one another process owns
            self._defer(lambda: self.actors.start_borrow(actor_id))

    def actor_handle_pickled(self, actor_id: bytes) -> None:
        self.actors.handle_pickled(actor_id)

    def actor_handle_deleted(self, actor_id: bytes) -> None:
        self._defer(lambda: self.actors.handle_deleted(actor_id))

    def kill_actor(self, actor_id: bytes, no_restart: bool) -> None:
        self.actors.kill(actor_id, no_restart)

    def named_actor(self, name: str, namespace: str | None) -> ActorInfo:
        return self.actors.named(name, namespace or self.job.namespace)

    def exit_actor(self) -> None:
        self.executor.request_exit("exit_actor() was called in the actor's code")

    def actor_info(self, actor_id: bytes) -> ActorInfo:
        return self.actors.info(actor_id)

    def cancel(self, ref: ObjectRef, force: bool, recursive: bool) -> None:
        """``ray.cancel``: the one entry point for normal tasks and actor calls."""
        owner = ref.owner_address()
        if owner is not None and owner.worker_id != self.worker_id:
            raise ValueError(
                f"ray.cancel({ref}): only the process that submitted a task can cancel it "
                f"(its owner is {owner}); cancel it there.")
        task_id = ref.task_id()
        if self.submitter.cancel(task_id, force, recursive):
            return
        self.actors.cancel(task_id, force, recursive)

    # -- who and where ------------------------------------------------------------------
    @property
    def runtime_env(self) -> dict:
        return self.job.runtime_env

    @runtime_env.setter
    def runtime_env(self, value: dict) -> None:
        self.job.runtime_env = value

    def identity(self) -> Identity:
        ctx = self.context
        pg = ctx.placement_group
        return Identity(
            job_id=self.job.hex, node_id=self.node["node_id"], worker_id=self.worker_id.hex(),
            namespace=self.job.namespace,
            task_id=ctx.task_id.hex() if ctx.running_task() else None,
            actor_id=None if ctx.actor_id is None else ctx.actor_id.hex(),
            placement_group_id=None if pg is None else pg.group_id,
            task_name=ctx.task_name if ctx.running_task() else None,
            actor_name=ctx.actor_name, actor_restarts=ctx.actor_restarts,
            capture_child_tasks=bool(pg is not None and pg.capture_child_tasks),
            gcs_address=getattr(self.gcs, "address", None))

    def resource_ids_now(self) -> dict:
        return self.context.resource_ids or {}

    def nodes(self) -> list[dict]:
        return cluster_info.nodes(self.gcs)

    def cluster_resources(self) -> dict:
        return cluster_info.cluster_resources(self.gcs, self._node_table)

    def available_resources(self) -> dict:
        try:  # this node's own view is current; the others' come from their heartbeats
            here = self.peers.local_raylet().call_sync("available_resources", timeout=10)
        except (RayError, RemoteError, OSError, TimeoutError) as exc:
            logger.debug("local raylet did not say what it has free: %s", exc)
            here = None
        local = None if here is None else (self.node_id.hex(), here)
        return cluster_info.available_resources(self.gcs, self.config.heartbeat_timeout_s,
                                                local=local)

    # -- cluster services ------------------------------------------------------------------
    def gcs_client(self):
        return self.gcs

    def placement_groups(self) -> PlacementGroupClient:
        return self._placement_groups

    def timeline_events(self) -> list[dict]:
        self.profiler.flush()
        return profiling.decode_batches(self.gcs.sharded_lrange(keys.PROFILE_EVENTS, 0))

    def profile_span(self, event_type: str, name: str, extra: dict | None = None):
        return self.profiler.span(event_type, name, extra)

    def reference_table(self) -> list[dict]:
        rows, _ = self.introspection.reference_table(limit=10**9)
        return rows

    def pushed_errors(self) -> list[dict]:
        return list(self._pushed_errors)

    def record_pushed_error(self, error: dict) -> None:
        """An error the cluster pushed to this driver (its tasks' failures, warnings)."""
        self._pushed_errors.append(error)

    # -- lifecycle --------------------------------------------------------------------------
    def add_shutdown_hook(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` at the end of ``shutdown`` (e.g. stop a dashboard this driver started)."""
        self._shutdown_hooks.append(fn)

    def bind_raylet(self, method: str, *args: Any) -> Any:
        """Register this process with its raylet (``register_driver``/``register_worker``)."""
        return self.raylet.call_sync(method, *args, timeout=30)

    def shutdown(self) -> None:
        if self.shutting_down:
            return
        self.profiler.stop()
        try:
            self.profiler.flush()
        except RayError as exc:
            logger.debug("last profile events lost at shutdown: %s", exc)
        self.shutting_down = True
        self.objects.shutting_down = True
        self.submitter.return_all()
        self.actors.shutdown()
        time.sleep(0)
        if self.mode == MODE_DRIVER:
            try:
                mark_job_finished(self.gcs, self.job.hex)
            except RayError as exc:  # its raylet marks the job finished when we disconnect
                logger.debug("could not mark job %s finished: %s", self.job.hex, exc)
        with contextlib.suppress(OSError, RayError):  # the store may be gone already
            self.plasma.disconnect()
        if self.node_processes is not None:
            with contextlib.suppress(RayError, TimeoutError):  # killed below regardless
                self.raylet.call_sync("shutdown", timeout=2)
        self.loop.stop()
        with contextlib.suppress(RayError, OSError):  # nothing left to say to Redis
            self.gcs.close()
        if self.node_processes is not None:
            self.node_processes.kill_all()
        self.peers.close()
        for hook in self._shutdown_hooks:
            hook()


__all__ = ["MODE_DRIVER", "MODE_WORKER", "CoreWorker"]
