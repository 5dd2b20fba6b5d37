"""The raylet: an asyncio process serving worker leases and hosting the object store.

Thin I/O shell around ``LeaseScheduler`` (decisions) and ``WorkerPool``
(processes). Local drivers and workers connect over a Unix socket; other
raylets and remote owners over TCP (spillback, object transfer). The heartbeat and
the head's dead-node monitor are ``NodeMonitor`` (``monitor.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import shutil
import signal
import socket
import time

import psutil

import plasma
from ray._private import aio, messages
from ray._private.gcs import keys
from ray._private.gcs.versioned import bump_version
from ray._private.raylet.job_workers import JobWorkers
from ray._private.raylet.log_server import LogServer
from ray._private.raylet.memory_guard import MemoryGuard
from ray._private.raylet.memory_monitor import MemoryMonitor, MemoryReader
from ray._private.raylet.monitor import NodeMonitor
from ray._private.raylet.object_manager import ObjectManager, transfer_trace
from ray._private.raylet.pg_manager import (
    NodeBundles,
    PlacementGroupManager,
    pg_of_shape,
    removed_reply,
)
from ray._private.raylet.resources import NodeResources
from ray._private.raylet.scheduler import (
    Grant,
    Infeasible,
    LeaseRequest,
    LeaseScheduler,
    Rejected,
    RemoteNode,
    Spillback,
)
from ray._private.raylet.spilling import LocalObjectManager, SpillConfig
from ray._private.raylet.worker_pool import (
    EXITING,
    IDLE,
    LEASED,
    STARTING,
    WorkerPool,
    worker_env,
)
from ray._private.rpc import Deferred

logger = logging.getLogger(__name__)

# An idle worker that said it still owns actors or objects in use is asked again (when
# the pool has too many idle ones) after this long.
_KEEP_OWNER_S = 10.0
# The reap loop's period while a worker is starting (a fork that dies before it
# connects is noticed only there), and while none is: a connected worker's death is
# seen on its socket, so idle the loop only checks the owner process of the node.
_REAP_BUSY_S = 0.1
_REAP_IDLE_S = 0.5
# With no worker bound to a job, nothing writes lines to stream: the log loop waits
# for a grant to bind one (or this long, whichever comes first).
_LOG_IDLE_S = 1.0


def _check_lease_shape(shape) -> None:
    """Refuse shapes that would corrupt resource accounting for everyone (a negative
    amount would be granted and inflate what the node offers to other clients)."""
    if not isinstance(shape, dict):
        raise ValueError(f"a lease shape must be a mapping of resource -> amount, got {shape!r}")
    for name, amount in shape.items():
        if (not isinstance(name, str) or isinstance(amount, bool)
                or not isinstance(amount, int | float) or not math.isfinite(amount) or amount < 0):
            raise ValueError(f"bad resource request {name!r}: {amount!r} (must be a finite "
                             "number >= 0)")


def visible_gpu_ids() -> list[int | str]:
    """The GPUs this node may hand out, as ``CUDA_VISIBLE_DEVICES`` listed them when it
    started (Ray's rule: a node started with ``CUDA_VISIBLE_DEVICES=4,5`` gives tasks
    GPUs 4 and 5); empty when it is not set (GPUs are then numbered from 0)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    return [int(d) if d.strip().isdigit() else d.strip()
            for d in visible.split(",") if d.strip()]


def _uses_gpus(shape: dict) -> bool:
    return any(name == "GPU" or name.startswith("GPU_group_") for name in shape)


class NodeManager:
    def __init__(self, args, config, gcs):
        self.args = args
        self.config = config
        self.gcs = gcs
        self.node_id: str = args.node_id
        self.node_ip: str = args.node_ip
        self.session_dir = args.session_dir
        total = dict(args.resources)
        self.resources = NodeResources(total, {"GPU": visible_gpu_ids()})
        self.scheduler = LeaseScheduler(self.resources)
        self.bundles = NodeBundles(self)  # placement-group bundles reserved here
        self.pg_manager = PlacementGroupManager(self) if args.head else None
        prestart = config.num_prestart_workers
        self.num_prestart = int(total.get("CPU", 0)) if prestart is None else prestart
        env = worker_env(args.config_json)
        self.pool = WorkerPool(
            session_dir=self.session_dir,
            worker_args=[
                "--node-id", self.node_id, "--node-ip", self.node_ip,
                "--gcs-address", args.gcs_address, "--session-dir", self.session_dir,
                "--raylet-socket", args.raylet_socket, "--plasma-socket", args.plasma_socket,
            ],  # the cluster secret travels in the environment ($RAY_REDIS_PASSWORD)
            env=env,
            max_idle=max(1, int(self.num_prestart * config.max_idle_workers_factor)),
            redirect_output=not args.no_redirect_worker_output, output_pid=args.owner_pid,
        )
        self.pending: dict[int, tuple[LeaseRequest, Deferred, object]] = {}
        self.waiting_for_worker: list[tuple[Grant, Deferred, object]] = []
        self._req_ids = 0
        self.store = None
        self.local_objects: LocalObjectManager | None = None  # primaries, spilling
        self._stopping = False
        self.memory_guard = MemoryGuard(
            pool=self.pool, gcs=gcs,
            monitor=MemoryMonitor(usage_threshold=config.memory_usage_threshold,
                                  min_free_bytes=config.min_memory_free_bytes,
                                  node_description=f"node {self.node_id[:8]} ({self.node_ip})"),
            period_s=config.memory_monitor_refresh_ms / 1000, read_usage=MemoryReader().read,
            stopping=lambda: self._stopping)
        self.monitor = NodeMonitor(
            gcs, node_id=self.node_id, is_head=args.head,
            period_s=config.heartbeat_period_s, timeout_s=config.heartbeat_timeout_s,
            gcs_address=args.gcs_address, register_node=self._register_node,
            publish_load=self.publish_load, on_beat=self._on_heartbeat,
            stop=self.request_stop, is_stopping=lambda: self._stopping)
        self.loop = None
        self.tcp_port = None
        self.drivers: dict[object, bytes] = {}
        self._refresh_pending = False
        self._log_wake = asyncio.Event()  # set when a worker is bound to a job (_log_loop)
        self.jobs = JobWorkers(
            pool=self.pool, gcs=gcs, num_prestart=self.num_prestart,
            on_loop=lambda fn, *args: self.loop.call_soon_threadsafe(fn, *args),
            stopping=lambda: self._stopping)
        self._raylet_addresses: dict[str, messages.RayletAddress] = {}  # live nodes
        self._published_load: tuple | None = None  # what the last load record said
        self._published_at = 0.0
        # runtime_env of pending/granted lease requests: request id -> [env key, env].
        self.lease_envs: dict[int, list] = {}
        self.env_setups: dict[str, asyncio.Future] = {}  # env key -> node-side setup
        self.env_start_failures: dict[str, int] = {}
        self.runtime_env_root = os.path.join(self.session_dir, "runtime_resources",
                                             self.node_id[:12])

    # -- startup --------------------------------------------------------------------
    async def start(self):
        self.loop = asyncio.get_running_loop()
        self.store = plasma.PlasmaStore(
            self.args.object_store_memory,
            directory=self.args.plasma_directory or "/dev/shm",
            huge_pages=self.args.huge_pages,
            prefault="deferred",  # after the zygote is up: it is on the first task's path
        )
        await self.store.start(self.args.plasma_socket)
        spill_config = (SpillConfig.from_ray_config(self.config, self.session_dir)
                        if self.config.automatic_object_spilling_enabled else None)
        self.local_objects = LocalObjectManager(self.store, spill_config, self.node_id,
                                                self.session_dir)
        self.store.add_listener(self._on_store_event)
        handlers = self._handlers()
        self.unix_server = await self.loop.create_unix_server(
            aio.server_factory(handlers, "raylet-local", self._peer_closed),
            path=self.args.raylet_socket,
        )
        self.tcp_server = await self.loop.create_server(  # TLS too when it is on
            aio.server_factory(handlers, "raylet-tcp", self._peer_closed, tcp=True),
            host=self.node_ip, port=self.args.node_manager_port or 0,
            family=socket.AF_INET, reuse_address=True,
        )
        self.tcp_port = self.tcp_server.sockets[0].getsockname()[1]
        self.transfer = ObjectManager(
            store=self.store, local_objects=self.local_objects, gcs=self.gcs,
            node_ip=self.node_ip, port=self.args.object_manager_port or 0,
            trace=transfer_trace(self.gcs, self.node_id, self.node_ip,
                                 self.config.profiling_enabled))
        self.pool.start_zygote(self.args.zygote)
        for _ in range(self.num_prestart):
            self.pool.start_worker()  # placeholders until the zygote is ready
        self.loop.create_task(self._zygote_ready())
        self.jobs.subscribe()
        self._register_node()
        if self.args.head:
            self._start_as_head()
        self.loop.create_task(self.monitor.run())
        self.loop.create_task(self._reap_loop())
        self.loop.create_task(self._log_loop())
        if self.config.memory_monitor_refresh_ms > 0:
            self.loop.create_task(self.memory_guard.run())

    def _node_info(self, alive=True):
        return {
            "node_id": self.node_id,
            "node_ip": self.node_ip,
            "raylet_socket": self.args.raylet_socket,
            "raylet_port": self.tcp_port,
            "object_manager_port": self.transfer.port,
            "object_transfer_port": self.transfer.port,
            "plasma_socket": self.args.plasma_socket,
            "session_dir": self.session_dir,
            "resources": self.resources.total_dict(),
            "alive": alive,
            "start_time": time.time(),
            "pid": os.getpid(),
            "is_head": self.args.head,
        }

    def _start_as_head(self) -> None:
        """Take over the cluster's head duties. Over a fresh GCS there is nothing to take
        over; over one that outlived the previous head (its Redis kept running, or
        reloaded its append-only file: ``ray start --head --redis-persist``) this head
        marks the old one dead at once (``ray start`` refuses to start a head next to a
        live one), so owners rebuild and restart what ran there without waiting for a
        heartbeat timeout; judges other nodes only after a full timeout of its own
        (their heartbeats may have stopped landing while the GCS was down); recovers the
        placement groups; and finishes the jobs of drivers on this machine that died
        with the old head."""
        self.monitor.take_over_as_head()
        self.jobs.adopt_orphans(self.node_ip)
        self.loop.create_task(self.pg_manager.recover())

    def _register_node(self):
        self.gcs.hset_obj(keys.NODES, self.node_id, self._node_info())
        bump_version(self.gcs, keys.NODES_VERSION)
        self._published_load = None  # a GCS that lost the table lost our load too
        self.gcs.hset(keys.NODE_HEARTBEATS, self.node_id, str(time.time()).encode())
        self.gcs.publish_obj(keys.CHANNEL_NODES, {"node_id": self.node_id, "alive": True})

    def _handlers(self):
        return {
            "register_worker": self.h_register_worker,
            "register_driver": self.h_register_driver,
            "request_lease": self.h_request_lease,
            "return_lease": self.h_return_lease,
            "notify_blocked": self.h_notify_blocked,
            "notify_unblocked": self.h_notify_unblocked,
            "free_objects": self.h_free_objects,
            "release_pulled": self.h_release_pulled,
            "pull_object": self.h_pull_object,
            "pull_objects": self.h_pull_objects,
            "read_object_chunk": self.h_read_object_chunk,
            "object_info": self.h_object_info,
            "kill_worker": self.h_kill_worker,
            "get_worker_death_cause": self.h_get_worker_death_cause,
            "node_info": lambda peer: self._node_info(),
            "available_resources": lambda peer: self.resources.available_dict(),
            "ping": lambda peer: "pong",
            "shutdown": self.h_shutdown,
            **self.bundles.handlers(),
            **(self.pg_manager.handlers() if self.pg_manager else {}),
            **LogServer(os.path.join(self.session_dir, "logs"),
                        f"node {self.node_id[:8]} ({self.node_ip})", self.loop).handlers(),
        }

    # -- registration ---------------------------------------------------------------
    def h_register_worker(self, peer, worker_id, pid, address):
        worker = self.pool.workers.get(worker_id)
        if worker is None:  # (an error reply: the worker exits naming it)
            raise KeyError(f"worker {worker_id.hex()[:8]} (pid {pid}) was not started by "
                           "this raylet, or it gave up on it already")
        worker.peer = peer
        worker.address = messages.OwnerAddress.from_wire(address)
        worker.state = IDLE
        peer.context["worker"] = worker
        if self._assign_waiting():
            self._apply(self.scheduler.dispatch())
        return True

    def h_register_driver(self, peer, job_id, pid, address):
        peer.context["driver"] = job_id
        return self._node_info()

    def _peer_closed(self, peer):
        # The peer's own queued lease requests go first: the resources its worker frees
        # below must not be granted to a request whose owner is gone.
        for rid, (_req, _deferred, owner_peer) in list(self.pending.items()):
            if owner_peer is peer:
                self.scheduler.cancel(rid)
                del self.pending[rid]
                self.lease_envs.pop(rid, None)
        worker = peer.context.get("worker")
        if worker is not None:
            self._worker_gone(worker, "disconnected")
        job_id = peer.context.get("driver")
        if job_id is not None:  # the job is over: its idle workers have nothing to do
            self.jobs.end_idle_workers_of({job_id})
            self.jobs.job_finished(job_id)
        # Leases held by this peer (a driver or worker that owned tasks) die with it.
        for w in list(self.pool.workers.values()):
            lease = w.lease
            if lease is not None and lease["owner_peer"] is peer and not w.detached:
                self.pool.kill(w)
                self._release_lease(w)
        still = []
        for grant, deferred, owner_peer in self.waiting_for_worker:
            if owner_peer is peer:  # granted, still waiting for a worker: give it back
                self.scheduler.resources.release(grant.allocation)
                self.lease_envs.pop(grant.request.request_id, None)
            else:
                still.append((grant, deferred, owner_peer))
        self.waiting_for_worker = still
        self._apply(self.scheduler.dispatch())

    def _worker_gone(self, worker, why):
        if worker.state == "dead":
            return
        self._release_lease(worker)
        self.pool.remove(worker)
        self.pool.kill(worker)
        self._maintain_pool()
        self.jobs.restore_prestarted()
        self._apply(self.scheduler.dispatch())

    # -- leases ---------------------------------------------------------------------
    def h_request_lease(self, peer, *wire):
        """``request_lease(*LeaseRequest.to_wire())``: answered with a LeaseReply."""
        request = messages.LeaseRequest.from_wire(wire)
        shape = request.shape
        _check_lease_shape(shape)
        if self.bundles.removed:
            pg_hex = pg_of_shape(shape)
            if pg_hex in self.bundles.removed:
                return removed_reply(pg_hex)
        self._req_ids += 1
        rid = self._req_ids
        if request.runtime_env is not None:  # [env key, resolved env]: a dedicated worker
            self.lease_envs[rid] = request.runtime_env
        req = LeaseRequest(rid, dict(shape), request.job_id, request.is_actor,
                           request.detached, request.spilled, request.strategy,
                           request.retriable, request.grant_or_reject)
        deferred = Deferred()
        self.pending[rid] = (req, deferred, peer)
        decisions = self.scheduler.submit(req)
        if logger.isEnabledFor(logging.DEBUG):  # available_dict() is not free: once per lease
            logger.debug("lease request %d %s -> %s (available %s, queued %d)", rid, shape,
                         decisions, self.resources.available_dict(), len(self.scheduler.queue))
        self._apply(decisions)
        return deferred

    def _apply(self, decisions):
        """Carry out the scheduler's decisions. Resources handed back on the way (a grant
        whose request or owner is gone) are offered to the queue again, so no decision
        of that re-dispatch is dropped (a dropped Grant would hold its resources forever
        and leave its request unanswered)."""
        while True:
            freed = self._apply_once(decisions)
            if not freed:
                return
            decisions = self.scheduler.dispatch()

    def _apply_once(self, decisions) -> bool:
        freed = False
        for d in decisions:
            entry = self.pending.get(d.request.request_id)
            if entry is None:
                if isinstance(d, Grant):
                    self.scheduler.resources.release(d.allocation)
                    freed = True
                continue
            req, deferred, peer = entry
            if isinstance(d, Grant):
                del self.pending[req.request_id]
                self.waiting_for_worker.append((d, deferred, peer))
            elif isinstance(d, Spillback):
                del self.pending[req.request_id]
                self.lease_envs.pop(req.request_id, None)
                deferred.resolve(messages.LeaseSpillback(
                    self._raylet_address(d.node_id), d.grant_or_reject, d.room).to_wire())
            elif isinstance(d, Rejected):
                del self.pending[req.request_id]
                self.lease_envs.pop(req.request_id, None)
                deferred.resolve(messages.LeaseRejected().to_wire())
            elif isinstance(d, Infeasible):
                self._warn_infeasible(req, d.cluster_total)
        return self._assign_waiting() or freed

    def _raylet_address(self, node_id: str) -> messages.RayletAddress:
        """Where a spilled request goes: from the node table the last heartbeat read (a
        node's address never changes), so a burst of spillbacks costs no GCS round trips."""
        address = self._raylet_addresses.get(node_id)
        if address is None:  # a node the views learnt of before the table did
            node = self.gcs.hget_obj(keys.NODES, node_id) or {}
            address = messages.RayletAddress(node_id, node.get("node_ip"),
                                             node.get("raylet_port"))
        return address

    def _warn_infeasible(self, req, total):
        if pg_of_shape(req.shape) is not None:
            # Its bundle is elsewhere (or not placed yet): it waits silently, like Ray;
            # fresh views let it spill to a bundle committed since our last heartbeat.
            self.refresh_remote_soon()
            return
        msg = (
            f"A task or actor needs {req.shape} but no node in the cluster can ever provide "
            f"that (cluster total: {total}). It will wait until a node that fits joins "
            "(e.g. via the autoscaler); lower its resource request if that will not happen."
        )
        logger.warning(msg)
        job_hex = req.job_id.hex() if req.job_id else ""
        try:
            self.gcs.publish_obj(
                keys.channel_errors(job_hex),
                {"type": "infeasible", "message": msg, "time": time.time()},
            )
        except Exception:  # noqa: BLE001 - a warning only: the request stays queued
            pass

    def _assign_waiting(self) -> bool:
        """Hand idle workers to granted requests; True when a grant whose owner is gone
        gave its resources back (the caller dispatches the queue again)."""
        freed = False
        still = []
        for grant, deferred, peer in self.waiting_for_worker:
            rid = grant.request.request_id
            if peer.closed:
                self.scheduler.resources.release(grant.allocation)
                self.lease_envs.pop(rid, None)
                freed = True
                continue
            env = self.lease_envs.get(rid)
            is_gpu = _uses_gpus(grant.request.shape)
            worker = self.pool.idle_for(grant.request.job_id, env[0] if env else None, is_gpu)
            if worker is None:
                still.append((grant, deferred, peer))
                continue
            if env is not None:
                del self.lease_envs[rid]
            worker.state = LEASED
            worker.job_id = grant.request.job_id
            self._log_wake.set()  # its output streams from now on
            worker.is_actor = grant.request.is_actor
            worker.detached = grant.request.detached
            worker.is_gpu = is_gpu
            worker.lease = {"allocation": grant.allocation, "owner_peer": peer, "lent": {},
                            "granted_at": time.monotonic(),  # the memory monitor's order
                            "retriable": grant.request.retriable}
            resource_ids = self.resources.resource_ids(grant.allocation)
            if self.bundles.ledger.groups:
                gpu_ids = self.bundles.gpu_ids(grant.allocation)
                if gpu_ids:
                    resource_ids["GPU"] = self.resources.device_pairs("GPU", gpu_ids)
            deferred.resolve(messages.LeaseGranted(
                worker.worker_id, worker.address, resource_ids, self.node_id).to_wire())
        self.waiting_for_worker = still
        self._maintain_pool()
        return freed

    def _maintain_pool(self):
        if self._stopping:
            return
        plain, with_env = [], {}
        for grant, _, _ in self.waiting_for_worker:
            env = self.lease_envs.get(grant.request.request_id)
            if env is None:
                plain.append(grant)
            else:
                with_env.setdefault((grant.request.job_id, env[0]), []).append(env)
        generic = [w for w in self.pool.workers.values() if w.env_key is None]
        starting = sum(1 for w in generic if w.state == STARTING)
        # Idle workers bound to another job, or to GPU work for CPU-only grants (and the
        # other way round), cannot serve these grants.
        idle = [w for w in generic if w.state == IDLE]
        unserved = 0
        for grant in plain:
            is_gpu = _uses_gpus(grant.request.shape)
            match = next((w for w in idle if w.can_serve(grant.request.job_id, is_gpu)), None)
            if match is None:
                unserved += 1
            else:
                idle.remove(match)
        needed = unserved - starting
        for _ in range(max(0, needed)):
            self.pool.start_worker()
        if with_env:
            self._start_env_workers(with_env)

    # -- runtime_env workers ------------------------------------------------------------
    def _start_env_workers(self, with_env: dict) -> None:
        for (job_id, key), envs in with_env.items():
            have = sum(1 for w in self.pool.workers.values() if w.env_key == key
                       and w.job_id == job_id and w.state in (STARTING, IDLE))
            for _ in range(len(envs) - have):
                worker = self.pool.start_worker(env_key=key, job_id=job_id)
                self._log_wake.set()
                self.loop.create_task(self._launch_env_worker(worker, envs[0][1]))

    async def _launch_env_worker(self, worker, env: dict) -> None:
        from ray._private import runtime_env

        key = worker.env_key
        setup = self.env_setups.get(key)
        if setup is None:  # once per env and node: fetch and unpack its packages
            setup = self.env_setups[key] = self.loop.run_in_executor(
                None, runtime_env.setup_on_node, self.gcs, env, self.runtime_env_root,
                self.pool.env)
        try:
            process_env, cwd = await asyncio.shield(setup)
        except Exception as exc:  # noqa: BLE001 - reported to the lease owners
            self.env_setups.pop(key, None)  # a later request tries again
            self._env_setup_failed(worker, exc)
            return
        if worker.state == STARTING and not self._stopping:
            try:
                self.pool.launch_with_env(worker, process_env, cwd)
            except OSError as exc:
                self._env_setup_failed(worker, exc)

    def _env_worker_died_starting(self, worker) -> None:
        """A worker for an env exited before registering (e.g. its env_vars break the
        interpreter): after a few tries, fail the env's leases instead of looping."""
        failures = self.env_start_failures[worker.env_key] = \
            self.env_start_failures.get(worker.env_key, 0) + 1
        if failures < 3:
            return
        self.env_start_failures.pop(worker.env_key)
        try:
            with open(worker.log_paths[1], "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 800))
                tail = f.read().decode(errors="replace").strip()
        except OSError:
            tail = ""
        self._env_setup_failed(worker, RuntimeError(
            f"its worker process exited during start-up {failures} times (check the env's "
            f"env_vars). Last output of {worker.log_paths[1]}:\n{tail}"))

    def _env_setup_failed(self, worker, exc) -> None:
        msg = f"runtime_env setup failed on node {self.node_id[:8]}: {exc}"
        logger.warning(msg)
        self.pool.remove(worker)
        still = []
        for grant, deferred, peer in self.waiting_for_worker:
            env = self.lease_envs.get(grant.request.request_id)
            if env is not None and env[0] == worker.env_key \
                    and grant.request.job_id == worker.job_id:
                del self.lease_envs[grant.request.request_id]
                self.scheduler.resources.release(grant.allocation)  # dispatched below
                deferred.resolve(messages.LeaseFailed(
                    messages.LeaseFailed.RUNTIME_ENV_SETUP, msg).to_wire())
            else:
                still.append((grant, deferred, peer))
        self.waiting_for_worker = still
        self._apply(self.scheduler.dispatch())

    def h_return_lease(self, peer, worker_id, kill):
        worker = self.pool.workers.get(worker_id)
        logger.debug("return lease %s state=%s", worker_id.hex()[:8], worker and worker.state)
        if worker is None or worker.state != LEASED:
            return
        self._release_lease(worker)
        if kill or worker.is_actor:
            self.pool.kill(worker)
            self.pool.remove(worker)
        else:
            worker.state = IDLE
            # most recently used last: trimming ends the workers idle the longest
            self.pool.workers[worker_id] = self.pool.workers.pop(worker_id)
            self._trim_idle()
        self._apply(self.scheduler.dispatch())

    def _release_lease(self, worker):
        lease, worker.lease = worker.lease, None
        if lease is None:
            return
        for name, units in lease["lent"].items():
            self.resources.reclaim(name, units)
        self.scheduler.resources.release(lease["allocation"])

    def _trim_idle(self):
        """Keep at most ``max_idle`` idle workers, ending those idle the longest (the pool
        lists returned workers last), as Ray does: a worker just handed back (say, one of
        a runtime env that is used in turns with another) is the one likely to be reused.
        Each is asked first, and one that still owns actors or objects in use stays (and
        is not counted) for ``_KEEP_OWNER_S``: ending it would end those."""
        now = time.monotonic()
        idle = [w for w in self.pool.workers.values()
                if w.state == IDLE and w.keep_until <= now]
        for w in idle[:max(0, len(idle) - self.pool.max_idle)]:
            if w.peer is None:
                self.pool.kill(w, signal.SIGTERM)
                self.pool.remove(w)
                continue
            w.state = EXITING
            answer = w.peer.call("exit_if_unowned")
            answer.add_done_callback(lambda f, w=w: self._exit_answered(w, f))

    def _exit_answered(self, worker, answer) -> None:
        if self.pool.workers.get(worker.worker_id) is not worker or worker.state != EXITING:
            return  # it died meanwhile
        if answer.exception() is None and answer.result() is False:
            worker.state = IDLE
            worker.keep_until = time.monotonic() + _KEEP_OWNER_S
            if self._assign_waiting():
                self._apply(self.scheduler.dispatch())
            return
        self.pool.kill(worker, signal.SIGTERM)
        self.pool.remove(worker)

    def h_notify_blocked(self, peer, worker_id):
        worker = self.pool.workers.get(worker_id)
        if worker is None or worker.lease is None or worker.blocked or worker.is_actor:
            return  # (an actor keeps its lifetime resources while it blocks, as in Ray)
        # The CPUs it holds, including a placement group's (so a task blocked on its
        # children in the same group does not starve them).
        cpus = {name: units for name, units in worker.lease["allocation"].amounts.items()
                if name == "CPU" or name.startswith("CPU_group_")}
        if cpus:
            worker.blocked = True
            worker.lease["lent"] = cpus
            for name, units in cpus.items():
                self.resources.lend(name, units)
            self._apply(self.scheduler.dispatch())

    def h_notify_unblocked(self, peer, worker_id):
        worker = self.pool.workers.get(worker_id)
        if worker is None or worker.lease is None or not worker.blocked:
            return
        worker.blocked = False
        lent, worker.lease["lent"] = worker.lease["lent"], {}
        for name, units in lent.items():
            self.resources.reclaim(name, units)

    def h_kill_worker(self, peer, worker_id, force=True):
        worker = self.pool.workers.get(worker_id)
        if worker is not None:
            self.pool.kill(worker, signal.SIGKILL if force else signal.SIGTERM)
        return True

    # -- objects --------------------------------------------------------------------
    def _on_store_event(self, event, object_id, size):
        if event == "sealed":
            self.local_objects.object_sealed(object_id.binary(), size)
        elif event == "deleted":
            self.local_objects.object_deleted(object_id.binary())

    def h_free_objects(self, peer, object_ids):
        self.local_objects.free(object_ids)

    def h_object_info(self, peer, object_id):
        got = self.store.get_local(object_id)
        if got is None:
            return None
        data, metadata = got
        size = len(data)
        self.store.release_local(object_id)
        return [size, metadata]

    def h_read_object_chunk(self, peer, object_id, offset, length):
        got = self.store.get_local(object_id)
        if got is None:
            raise KeyError(f"object {object_id.hex()} is not on node {self.node_id[:8]}")
        data, _ = got
        try:
            return bytes(data[offset:offset + length])
        finally:
            self.store.release_local(object_id)

    def h_pull_object(self, peer, object_id, node_id):
        deferred = Deferred()
        self.loop.create_task(self.transfer.pull(object_id, node_id, deferred))
        return deferred

    def h_release_pulled(self, peer, object_ids):
        """A reader read what ``pull_object(s)`` brought it (``ObjectManager.release_pulled``)."""
        self.transfer.release_pulled(object_ids)

    def h_pull_objects(self, peer, pairs):
        """Several objects for one reader, as one bundle (``ObjectManager.pull_bundle``)."""
        deferred = Deferred()
        self.loop.create_task(self.transfer.pull_bundle(pairs, deferred))
        return deferred

    # -- periodic -------------------------------------------------------------------
    async def _zygote_ready(self):
        ok = await self.loop.run_in_executor(None, self.pool.wait_zygote)
        self.pool.zygote_started(ok)
        self.store.start_prefault()

    def _on_heartbeat(self, nodes: dict, loads: dict, now: float) -> None:
        """After each heartbeat (``NodeMonitor.beat``): the node table and load records
        it read update this raylet's views of the cluster."""
        self._apply(self.scheduler.update_remote(self._remote_views(nodes, loads, now)))
        self.bundles.check_queued()
        if self.pg_manager is not None:
            self.pg_manager.tick(nodes, now)
        self.jobs.finish_orphans()

    def publish_load(self, now: float) -> None:
        """Write this node's load record when its resources or demand changed (and bump
        the loads' version, so the other raylets re-read them), else only every quarter
        heartbeat timeout: its ``time`` and store statistics stay fresh for readers that
        check them, and an idle cluster's beats read and write no O(nodes) table."""
        resources = (self.resources.available_dict(), self.resources.total_dict(),
                     self.scheduler.pending_demand() + (
                         self.pg_manager.pending_bundles() if self.pg_manager else []))
        changed = resources != self._published_load
        if not changed and now - self._published_at < self.config.heartbeat_timeout_s / 4:
            return
        available, total, demand = resources
        self.gcs.hset_obj(keys.NODE_LOADS, self.node_id, {
            "available": available, "total": total, "demand": demand, "time": now,
            "store": self.store_stats().to_wire(),  # for `ray memory --stats-only`
        })
        self._published_load, self._published_at = resources, now
        if changed:
            bump_version(self.gcs, keys.NODE_LOADS_VERSION)

    def store_stats(self) -> messages.StoreStats:
        spill = self.local_objects.stats
        return messages.StoreStats(
            used_bytes=int(self.store.used_bytes), capacity_bytes=int(self.store.capacity_bytes),
            num_objects=self.store.num_objects, primary_bytes=self.local_objects.primary_bytes,
            spilled_bytes=spill.spilled_bytes, spilled_objects=spill.spilled_objects,
            spill_time_s=spill.spill_time_s, restored_bytes=spill.restored_bytes,
            restored_objects=spill.restored_objects, restore_time_s=spill.restore_time_s)

    def _remote_views(self, nodes: dict, loads: dict, now: float) -> dict:
        remote = {}
        for node_id, info in nodes.items():
            if node_id == self.node_id or not info.get("alive", True):
                self._raylet_addresses.pop(node_id, None)
                continue
            if node_id not in self._raylet_addresses:
                self._raylet_addresses[node_id] = messages.RayletAddress(
                    node_id, info.get("node_ip"), info.get("raylet_port"))
            load = loads.get(node_id)
            if load is None or now - load.get("time", 0) > self.config.heartbeat_timeout_s:
                continue
            remote[node_id] = RemoteNode(dict(load["total"]), dict(load["available"]))
        return remote

    def refresh_remote_soon(self) -> None:
        """Re-read the other nodes' resources now rather than at the next heartbeat: a
        placement group's bundles committed elsewhere are published at once, so its
        first tasks spill there without waiting up to two heartbeat periods."""
        if self._refresh_pending or self._stopping:
            return
        self._refresh_pending = True

        def refresh():
            self._refresh_pending = False
            try:  # what changed since the last beat, read now (a version moved)
                now = time.time()
                nodes = self.monitor.nodes.read(self.gcs, now)
                loads = self.monitor.loads.read(self.gcs, now)
            except Exception:  # noqa: BLE001 - the heartbeat reports GCS trouble
                return
            views = self._remote_views(nodes, loads, now)
            self._apply(self.scheduler.update_remote(views))

        self.loop.call_later(0.002, refresh)

    async def _reap_loop(self):
        while not self._stopping:
            for worker in self.pool.reap():
                if worker.env_key is not None and worker.address is None:
                    self._env_worker_died_starting(worker)
                self._release_lease(worker)
                self._maintain_pool()
                self._apply(self.scheduler.dispatch())
            owner_pid = self.args.owner_pid
            if owner_pid and not psutil.pid_exists(owner_pid):
                logger.info("driver %d exited; shutting the node down", owner_pid)
                self.request_stop()
                return
            starting = any(w.state == STARTING for w in self.pool.workers.values())
            await asyncio.sleep(_REAP_BUSY_S if starting else _REAP_IDLE_S)

    def h_get_worker_death_cause(self, peer, worker_id):
        """Why a worker this raylet killed died (``WorkerKilled`` wire form), or None."""
        cause = self.memory_guard.death_cause(worker_id)
        return None if cause is None else cause.to_wire()

    async def _log_loop(self):
        from ray._private.raylet.log_monitor import publish_new_lines

        while not self._stopping:
            if not any(w.job_id is not None for w in self.pool.workers.values()):
                # Idle workers run no job's code: sleep until a grant binds one. (At 100
                # nodes on one machine, 10 polls a second per raylet were a fifth of the
                # raylets' idle CPU.)
                self._log_wake.clear()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._log_wake.wait(), _LOG_IDLE_S)
                continue
            try:
                publish_new_lines(self)
            except Exception:
                logger.debug("log monitor failed", exc_info=True)
            await asyncio.sleep(self.config.log_to_driver_poll_s)

    # -- shutdown -------------------------------------------------------------------
    def h_shutdown(self, peer):
        self.request_stop()
        return True

    def request_stop(self):
        if not self._stopping:
            self._stopping = True
            self.loop.call_soon(self._stop_event.set)

    async def run_until_stopped(self):
        self._stop_event = asyncio.Event()
        await self.start()
        await self._stop_event.wait()
        await self.stop()

    async def stop(self):
        self._stopping = True
        try:
            self.gcs.hset_obj(keys.NODES, self.node_id, self._node_info(alive=False))
            bump_version(self.gcs, keys.NODES_VERSION)
            self.gcs.publish_obj(keys.CHANNEL_NODES, {"node_id": self.node_id, "alive": False})
        except Exception:  # noqa: BLE001 - best effort at exit: the head times us out anyway
            pass
        self.pool.stop_all()
        shutil.rmtree(self.runtime_env_root, ignore_errors=True)  # unpacked runtime_envs
        with contextlib.suppress(OSError):  # shared by the nodes of this session
            os.rmdir(os.path.dirname(self.runtime_env_root))
        for server in (self.unix_server, self.tcp_server):
            server.close()
        self.transfer.stop()
        if self.local_objects is not None:
            await self.local_objects.stop()  # removes this node's spill files
        if self.store is not None:
            await self.store.stop()
        try:
            os.unlink(self.args.raylet_socket)
        except OSError:
            pass
