"""The cluster runtime inside every driver and worker process.

Owns the objects its tasks create (memory store + reference counts), submits
tasks through worker leases, executes tasks pushed to it (in workers), and
answers other processes asking for objects it owns. One I/O thread handles
every socket; user code runs on the main thread.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import socket
import sys
import threading
import time

import plasma
from ray._private import ids as ids_mod
from ray._private import profiling, runtime_env
from ray._private.gcs import keys
from ray._private.object_ref import ObjectRef
from ray._private.profiling import EventBuffer
from ray._private.rpc import Deferred, RemoteError, RpcPeer
from ray._private.runtime import cluster_info, introspection, placement_groups
from ray._private.runtime import serialization as ser
from ray._private.runtime.function_manager import FunctionManager
from ray._private.runtime.memory_store import Inline, InPlasma, MemoryStore
from ray._private.runtime.reference_counter import ReferenceCounter
from ray._private.runtime.task_executor import (
    ARG_INLINE,
    ARG_REF,
    RESULT_INLINE,
    RESULT_PLASMA,
    TaskExecutor,
)
from ray._private.runtime.task_submitter import (
    ARGS,
    KIND_NORMAL,
    PendingTask,
    TaskSubmitter,
)
from ray._private.transport import EventLoop, connect_socket
from ray.exceptions import (
    GetTimeoutError,
    ObjectLostError,
    ObjectStoreFullError,
    RayConnectionError,
)

logger = logging.getLogger(__name__)

MODE_DRIVER, MODE_WORKER = "driver", "worker"
# After a failed connect to a raylet, spillbacks naming it fail fast for this long
# (the head marks a silent node dead within heartbeat_timeout_s).
_UNREACHABLE_FOR_S = 10.0


class CoreWorker:
    def __init__(
        self,
        *,
        mode: str,
        node: dict,
        job_id: ids_mod.JobID,
        config,
        gcs,
        worker_id: bytes | None = None,
        object_id_seed: int | None = None,
        namespace: str = "default",
    ):
        self.mode = mode
        self.node = node
        self.node_id: bytes = bytes.fromhex(node["node_id"])
        self.node_ip: str = node["node_ip"]
        self.config = config
        self.gcs = gcs
        self.job_id = job_id
        self.job_id_bytes = job_id.binary()
        self.job_hex = job_id.hex()
        self.namespace = namespace
        self.worker_id = worker_id or os.urandom(20)
        self.shutting_down = False
        self.ids = ids_mod.IdGenerator(job_id, object_id_seed)
        self.base_task_id = self.ids.next_task_id()
        self.current_task_id = self.base_task_id
        self.resource_ids: dict = {}
        self.actor_id: bytes | None = None
        self.actor_owner = None
        # [group id hex, bundle index, capture child tasks] while running in a placement group.
        self.placement_group = None
        # Resolved runtime_env of this job (driver) or of this worker (ray._private.runtime_env).
        self.runtime_env: dict = {}
        self.memory_store = MemoryStore()
        self.refs = ReferenceCounter(self._on_ref_freed)
        self.functions = FunctionManager(gcs, self.job_hex, config.load_code_from_local)
        self.submitter = TaskSubmitter(self)
        self.executor = TaskExecutor(self)
        self.actors = None  # set below (ActorManager) to avoid an import cycle
        self._peers: dict[bytes, RpcPeer] = {}
        self._raylet_peers: dict[str, RpcPeer] = {}
        self._unreachable_raylets: dict[str, float] = {}  # node id -> when a connect failed
        self._peers_lock = threading.Lock()
        self._blocked_depth = 0
        self._requested: set[bytes] = set()
        self._lineage: dict[bytes, PendingTask] = {}
        self._decrefs: collections.deque = collections.deque()
        self._profile_events = EventBuffer(config.max_profile_events_buffered)
        self.handlers = self._make_handlers()
        self.pushed_errors: list = []
        self.address_info: dict = {}
        self.node_processes = None

        self.loop = EventLoop(name=f"ray-io-{mode}", spin_s=config.io_spin_us / 1e6)
        self.loop.start()
        self._listen()
        self.raylet = self._connect_raylet(node["raylet_socket"])
        if mode == MODE_DRIVER:
            os.environ.setdefault(
                "PLASMA_CLIENT_PREFAULT_BYTES", str(config.object_store_prefault_bytes)
            )
            # In the background: ray.init returns before the driver's page tables are
            # populated (a big put in the first second populates its own pages).
            os.environ.setdefault("PLASMA_CLIENT_PREFAULT_MODE", "background")
        self.plasma = plasma.connect(node["plasma_socket"])

        from ray._private.runtime.actor_manager import ActorManager

        self.actors = ActorManager(self)
        self._flusher = profiling.PeriodicFlusher(config.task_events_flush_period_s,
                                                  self.flush_profile_events)
        gcs.subscribe_obj(keys.CHANNEL_NODES, self._on_node_event)
        introspection.install(self)
        self.loop.call_later(0.01, self._periodic_drain)

    # -- wiring -------------------------------------------------------------------
    def _make_handlers(self):
        return {
            "push_tasks": lambda peer, specs: self.executor.push(peer, specs),
            "tasks_done": self._on_tasks_done,
            "get_object": self._handle_get_object,
            "add_borrower": lambda peer, oid, who: self.refs.add_borrower(oid, who),
            "remove_borrower": lambda peer, oid, who: self.refs.remove_borrower(oid, who),
            "lease_reclaim": lambda peer, worker_id: self.submitter.reclaim(worker_id),
            "exit": self._handle_exit,
            "ping": lambda peer: "pong",
        }

    def _on_tasks_done(self, peer, done):
        ctx = peer.context
        if "actor" in ctx:
            self.actors.on_tasks_done(peer, done)
        else:
            self.submitter.on_tasks_done(peer, done)

    def _new_peer(self, write, name):
        peer = RpcPeer(write, self.handlers, name=name, on_close=self._peer_closed)
        peer.context["on_close"] = []
        return peer

    def _peer_closed(self, peer):
        for cb in peer.context.get("on_close", ()):
            try:
                cb(peer)
            except Exception:
                logger.exception("close callback failed")
        with self._peers_lock:
            for key, p in list(self._peers.items()):
                if p is peer:
                    del self._peers[key]
            for key, p in list(self._raylet_peers.items()):
                if p is peer:
                    del self._raylet_peers[key]

    def _listen(self):
        from ray._private.node import socket_dir

        sock_dir = socket_dir(self.node["session_dir"])
        self.unix_path = os.path.join(sock_dir, f"worker-{self.worker_id.hex()[:16]}")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.unix_path)
        unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        unix.bind(self.unix_path)
        unix.listen(128)
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.bind((self.node_ip, 0))
        tcp.listen(128)
        self.port = tcp.getsockname()[1]
        self.address = [self.node_ip, self.port, self.unix_path, self.worker_id]
        self.loop.listen(unix, self._accept)
        self.loop.listen(tcp, self._accept)

    def _accept(self, sock):
        if sock.family == socket.AF_INET:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.loop.add_connection(sock, lambda write: self._new_peer(write, "incoming"), server=True)

    def _connect_raylet(self, path):
        try:
            sock = connect_socket(path, timeout_s=self.config.gcs_connect_timeout_s)
        except OSError as exc:
            raise RayConnectionError(f"Cannot connect to the raylet at {path}: {exc}") from None
        conn = self.loop.add_connection(sock, lambda write: self._new_peer(write, "raylet"))
        conn.peer.context["on_close"].append(self._raylet_lost)
        return conn.peer

    def _raylet_lost(self, peer):
        if not self.shutting_down:
            logger.error("lost the connection to the local raylet")
            if self.mode == MODE_WORKER:
                os._exit(1)

    def owner_address(self):
        return self.address

    def bind_job(self, job_hex: str) -> None:
        """A worker serves the job of the first task it runs."""
        self.job_id = ids_mod.JobID.from_hex(job_hex)
        self.job_id_bytes = self.job_id.binary()
        self.job_hex = job_hex
        self.functions = FunctionManager(self.gcs, job_hex, self.config.load_code_from_local)
        self.ids = ids_mod.IdGenerator(self.job_id)
        try:  # the driver's script folder, so its sibling modules import here too
            job = self.gcs.hget_obj(keys.JOBS, job_hex) or {}
        except Exception:
            job = {}
        for folder in reversed(job.get("sys_path") or []):
            if folder not in sys.path and os.path.isdir(folder):
                sys.path.insert(0, folder)

    def connect_worker(self, address, on_lost=None) -> RpcPeer:
        worker_id = address[3]
        with self._peers_lock:
            peer = self._peers.get(worker_id)
            if peer is not None and not peer.closed:
                if on_lost is not None and on_lost not in peer.context["on_close"]:
                    peer.context["on_close"].append(on_lost)
                return peer
        if address[0] == self.node_ip and os.path.exists(address[2]):
            target = address[2]
        else:
            target = (address[0], address[1])
        sock = connect_socket(target, timeout_s=5.0, retry=False, handshake=False)
        conn = self.loop.add_connection(sock, lambda write: self._new_peer(write, "worker"),
                                        client_auth=f"worker {address[0]}:{address[1]}")
        if on_lost is not None:
            conn.peer.context["on_close"].append(on_lost)
        with self._peers_lock:
            existing = self._peers.get(worker_id)
            if existing is not None and not existing.closed:
                conn.close("duplicate")
                if on_lost is not None and on_lost not in existing.context["on_close"]:
                    existing.context["on_close"].append(on_lost)
                return existing
            self._peers[worker_id] = conn.peer
        return conn.peer

    def raylet_peer_for(self, target: dict) -> RpcPeer:
        node_id = target["node_id"]
        if node_id == self.node["node_id"]:
            return self.raylet
        with self._peers_lock:
            peer = self._raylet_peers.get(node_id)
            if peer is not None and not peer.closed:
                return peer
            failed_at = self._unreachable_raylets.get(node_id)
        # This runs on the I/O thread (lease replies): a node that just died must not
        # stall it for a full connect timeout on every spillback that names it.
        if failed_at is not None and time.monotonic() - failed_at < _UNREACHABLE_FOR_S:
            raise ConnectionRefusedError(f"raylet {node_id[:8]} was unreachable just now")
        try:
            sock = connect_socket(tuple(target["address"]), timeout_s=2.0, retry=False,
                                  handshake=False)
        except OSError:
            with self._peers_lock:
                self._unreachable_raylets[node_id] = time.monotonic()
            raise
        conn = self.loop.add_connection(sock, lambda write: self._new_peer(write, "raylet-remote"),
                                        client_auth=f"raylet of node {node_id[:8]}")
        with self._peers_lock:
            self._raylet_peers[node_id] = conn.peer
        return conn.peer

    # -- references ------------------------------------------------------------------
    def add_local_ref(self, object_id: bytes, owner) -> None:
        if owner is not None and owner[3] == self.worker_id:
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

    def defer(self, fn) -> None:
        """Run ``fn`` soon, outside any lock (for __del__ hooks)."""
        self._decrefs.append(fn)

    def _periodic_drain(self) -> None:
        if self.shutting_down:
            return
        try:
            self._drain_decrefs()
        except Exception:
            logger.exception("releasing references failed")
        self.loop.call_later(0.01, self._periodic_drain)

    def _on_ref_freed(self, object_id: bytes, owned: bool, owner) -> None:
        entry = self.memory_store.delete(object_id)
        task = self._lineage.get(object_id[:16])
        if task is not None and not any(self.refs.is_tracked(o) for o in task.return_ids):
            del self._lineage[object_id[:16]]
            if task.arg_refs:
                self.refs.remove_submitted(task.arg_refs)
        if self.shutting_down:
            return
        if owned and isinstance(entry, InPlasma):
            try:
                if entry.node_id == self.node_id:
                    self.raylet.notify("free_objects", [object_id])
                else:
                    self._free_remote(entry.node_id, object_id)
            except RayConnectionError:
                pass

    def _on_node_event(self, _channel, msg) -> None:
        # While shutting down, our own raylet's exit notice is no reason to rebuild.
        if msg.get("alive", True) or self.shutting_down:
            return
        dead = bytes.fromhex(msg["node_id"])
        lost = [oid for oid, entry in list(self.memory_store._entries.items())
                if isinstance(entry, InPlasma) and entry.node_id == dead]
        for oid in lost:
            self.memory_store.delete(oid)
            task = self._lineage.get(oid[:16])
            if task is not None and task.retries_left != 0:
                task.retries_left -= 1
                logger.info("rebuilding %s (its node died) by re-running %s",
                            oid.hex(), task.spec[3])
                # Drop the other returns too: they are recomputed together.
                for other in task.return_ids:
                    self.memory_store.delete(other)
                self.submitter.resubmit(task)
            elif self.refs.is_tracked(oid):
                self._store_lost(oid, f"its only copy was on node {dead.hex()[:8]}, which died")

    def _free_remote(self, node_id: bytes, object_id: bytes):
        info = self.gcs.hget_obj(keys.NODES, node_id.hex())
        if info and info.get("alive", True):
            peer = self.raylet_peer_for(
                {"node_id": node_id.hex(), "address": [info["node_ip"], info["raylet_port"]]}
            )
            peer.notify("free_objects", [object_id])

    # -- put / store ---------------------------------------------------------------------
    def put(self, value) -> ObjectRef:
        if isinstance(value, ObjectRef):
            raise TypeError(
                "Calling ray.put on an ObjectRef is not allowed: the ref already names a "
                "stored value. Put the value itself, or pass the ref around directly."
            )
        self._drain_decrefs()  # free what the program dropped before allocating more
        object_id = self.ids.next_put_id(self.current_task_id)
        self.refs.add_owned(object_id)
        entry, contained = self._store(object_id, value)
        if contained:
            self.refs.mark_escaped([r.binary() for r in contained])
        self.memory_store.put(object_id, entry)
        return ObjectRef(object_id, None)

    def _store(self, object_id: bytes, value):
        serialized, contained = ser.serialize(value)
        size = serialized.total_bytes
        if size <= self.config.max_inline_bytes:
            return Inline(serialized.metadata, serialized.to_bytes()), contained
        self._put_plasma(object_id, serialized)
        return InPlasma(self.node_id, size), contained

    def _put_plasma(self, object_id: bytes, serialized) -> None:
        try:
            buf = self.plasma.create(object_id, serialized.total_bytes, serialized.metadata)
        except plasma.errors.ObjectStoreFullError as exc:
            raise ObjectStoreFullError(
                f"{exc} Free references to objects you no longer need, or start ray with a "
                "larger object_store_memory."
            ) from None
        try:
            serialized.write_to(buf)
        except BaseException:
            buf.release()
            self.plasma.abort(object_id)
            raise
        buf.release()
        self.plasma.seal(object_id)
        self.plasma.release(object_id)

    def store_return(self, object_id: bytes, value):
        serialized, contained = ser.serialize(value)
        if contained:
            self.refs.mark_escaped([r.binary() for r in contained])
        size = serialized.total_bytes
        if size <= self.config.max_inline_bytes:
            return [object_id, RESULT_INLINE, serialized.metadata, serialized.to_bytes()]
        self._put_plasma(object_id, serialized)
        return [object_id, RESULT_PLASMA, self.node_id, size]

    def store_results(self, results, task=None) -> None:
        for object_id, kind, a, b in results:
            if kind == RESULT_INLINE:
                self.memory_store.put(object_id, Inline(a, b))
            else:
                if task is not None and task.retries_left != 0:
                    # Keep the spec (and its arguments) so a lost copy can be rebuilt.
                    self._lineage[object_id[:16]] = task
                self.memory_store.put(object_id, InPlasma(a, b))

    # -- tasks ------------------------------------------------------------------------------
    def build_args(self, args, kwargs):
        """Encode arguments; returns (encoded, kwarg_names, deps, pinned_ids)."""
        encoded, deps, pinned = [], [], []
        values = list(args) + list(kwargs.values()) if kwargs else args
        for value in values:
            if isinstance(value, ObjectRef):
                oid = value.binary()
                owner = value.owner_address()
                pinned.append(oid)
                if owner is None or owner[3] == self.worker_id:
                    entry = self.memory_store.get(oid)
                    if isinstance(entry, Inline):  # the id stays for the timeline's arrows
                        encoded.append([ARG_INLINE, entry.metadata, entry.data, oid])
                        continue
                    if entry is None:
                        deps.append(oid)
                    encoded.append([ARG_REF, oid, self.address])
                else:
                    encoded.append([ARG_REF, oid, owner])
                continue
            serialized, contained = ser.serialize(value)
            if contained:
                self.refs.mark_escaped([r.binary() for r in contained])
            if serialized.total_bytes <= self.config.max_inline_bytes:
                encoded.append([ARG_INLINE, serialized.metadata, serialized.to_bytes()])
            else:  # implicit put: large arguments go through the object store once
                oid = self.ids.next_put_id(self.current_task_id)
                self.refs.add_owned(oid)
                self._put_plasma(oid, serialized)
                self.memory_store.put(oid, InPlasma(self.node_id, serialized.total_bytes))
                pinned.append(oid)
                encoded.append([ARG_REF, oid, self.address])
        self.refs.add_submitted(pinned)
        return encoded, list(kwargs) if kwargs else [], deps, pinned

    def inline_resolved_args(self, spec) -> None:
        args = spec[ARGS]
        for i, arg in enumerate(args):
            if arg[0] == ARG_REF and arg[2][3] == self.worker_id:
                entry = self.memory_store.get(arg[1])
                if isinstance(entry, Inline):
                    args[i] = [ARG_INLINE, entry.metadata, entry.data, arg[1]]

    def new_return_refs(self, task_id: bytes, num_returns: int) -> list[ObjectRef]:
        refs = []
        for i in range(1, num_returns + 1):
            oid = task_id + i.to_bytes(4, "little")
            self.refs.add_owned(oid)
            refs.append(ObjectRef(oid, None))
        return refs

    def submit_task(self, function_id, name, args, kwargs, opts) -> list[ObjectRef]:
        if self._decrefs:
            self._drain_decrefs()
        encoded, kw_names, deps, pinned = self.build_args(args, kwargs)
        task_id = self.ids.next_task_id()
        num_returns = opts.num_returns
        options = {"max_calls": opts.max_calls} if opts.max_calls else None
        strategy = opts.strategy()
        if strategy is None and self.placement_group is not None and self.placement_group[2]:
            opts = placement_groups.captured(opts, self.placement_group)
            strategy = opts.strategy()
        if strategy is not None and hasattr(strategy, "placement_group"):
            options = dict(options or {}, pg=placement_groups.spec_entry(strategy))
            strategy = None  # the rewritten shape steers it
        spec = [
            task_id, self.job_hex, function_id, name, encoded, kw_names, num_returns,
            self.address, options, None, KIND_NORMAL, None, None, 0, self.submit_stamp(),
        ]
        refs = self.new_return_refs(task_id, num_returns)
        shape = opts.resource_shape()
        task = PendingTask(
            spec, opts.shape_key(), opts.max_retries,
            [r.binary() for r in refs], pinned,
        )
        if opts.runtime_env is not None or self.runtime_env:
            task.runtime_env = runtime_env.for_submission(self, opts.runtime_env, opts)
        self.submitter.submit(task, shape, deps, strategy)
        return refs

    def task_finished(self, task: PendingTask) -> None:
        if task.arg_refs and task.spec[0] not in self._lineage:
            self.refs.remove_submitted(task.arg_refs)

    def fail_task(self, task: PendingTask, error: BaseException) -> None:
        small = ser.serialize_error(error)
        for oid in task.return_ids:
            self.memory_store.put(oid, Inline(small.metadata, small.data))
        self.task_finished(task)
        if task.on_done is not None:
            task.on_done(task, None, error)

    def report_task_error(self, name: str, traceback_str: str) -> None:
        error = {"type": "task", "name": name, "pid": os.getpid(), "ip": self.node_ip,
                 "message": traceback_str, "time": time.time(), "job_id": self.job_hex}
        try:  # kept per job for ray.errors(all_jobs=True) and the dashboard
            import msgpack

            self.gcs.sharded_rpush(keys.errors(self.job_hex),
                                   msgpack.packb(error, use_bin_type=True), max_len=1000)
            self.gcs.publish_obj(keys.channel_errors(self.job_hex), error)
        except Exception:
            logger.debug("could not report a task error", exc_info=True)

    # -- get / wait --------------------------------------------------------------------------
    def _request_from_owner(self, object_id: bytes, owner) -> None:
        """Ask ``owner`` for the object; the answer lands in our memory store."""
        try:
            peer = self.connect_worker(owner)
        except OSError as exc:
            self._store_lost(object_id, f"its owner at {owner[0]}:{owner[1]} is unreachable ({exc})")
            return
        fut = peer.call("get_object", object_id)

        def done(f):
            try:
                reply = f.result()
            except (RemoteError, RayConnectionError) as exc:
                self._store_lost(object_id, f"its owner died ({exc})")
                return
            kind, a, b = reply
            self.memory_store.put(object_id, Inline(a, b) if kind == RESULT_INLINE else InPlasma(a, b))

        fut.add_done_callback(done)

    def _store_lost(self, object_id: bytes, reason: str):
        small = ser.serialize_error(ObjectLostError(object_id.hex(), reason))
        self.memory_store.put(object_id, Inline(small.metadata, small.data))

    def _handle_get_object(self, peer, object_id: bytes):
        entry = self.memory_store.get(object_id)
        if entry is not None:
            return self._encode_entry(entry)
        if not self.refs.is_tracked(object_id):
            raise KeyError(f"object {object_id.hex()} is not owned here (freed or never created)")
        deferred = Deferred()

        def ready():
            deferred.resolve(self._encode_entry(self.memory_store.get(object_id)))

        self.memory_store.on_ready([object_id], ready)
        return deferred

    @staticmethod
    def _encode_entry(entry):
        if isinstance(entry, Inline):
            return [RESULT_INLINE, entry.metadata, entry.data]
        return [RESULT_PLASMA, entry.node_id, entry.size]

    def _ensure_requested(self, pairs) -> None:
        for object_id, owner in pairs:
            if owner is None or owner[3] == self.worker_id:
                continue
            if self.memory_store.contains(object_id):
                continue
            # One request per object per process: remember it in the peer-independent set.
            if object_id in self._requested:
                continue
            self._requested.add(object_id)
            self._request_from_owner(object_id, owner)

    def get(self, refs, timeout_s: float | None):
        return self.get_by_ids([(r.binary(), r.owner_address()) for r in refs], timeout_s)

    def get_by_ids(self, pairs, timeout_s: float | None):
        self._ensure_requested(pairs)
        ids = [oid for oid, _ in pairs]
        unique = list(dict.fromkeys(ids))
        if not all(self.memory_store.contains(oid) for oid in unique):
            self._set_blocked(True)
            try:
                ok = self.memory_store.wait(unique, len(unique), timeout_s)
            finally:
                self._set_blocked(False)
            if not ok:
                missing = [oid.hex() for oid in unique if not self.memory_store.contains(oid)]
                raise GetTimeoutError(
                    f"ray.get timed out after {timeout_s} s waiting for {len(missing)} of "
                    f"{len(unique)} objects (first: {missing[0]})."
                )
        for oid in unique:
            self._requested.discard(oid)
        return [self._value(oid) for oid in ids]

    def _value(self, object_id: bytes):
        entry = self.memory_store.get(object_id)
        if entry is None:
            raise ObjectLostError(object_id.hex(), "it was freed while being read")
        if isinstance(entry, Inline):
            return ser.deserialize(entry.metadata, entry.data)
        if entry.node_id != self.node_id:
            self._pull(object_id, entry.node_id)
        got = self.plasma.get_buffers([object_id], timeout_ms=0, with_meta=True)[0]
        if got is None:
            raise ObjectLostError(object_id.hex(), "it is no longer in the object store")
        data, metadata = got
        return ser.deserialize(metadata, data)

    def _pull(self, object_id: bytes, node_id: bytes) -> None:
        try:
            self.raylet.call_sync("pull_object", object_id, node_id, timeout=None)
        except RemoteError as exc:
            raise ObjectLostError(object_id.hex(), f"it could not be fetched: {exc}") from None

    def _set_blocked(self, blocked: bool) -> None:
        if self.mode != MODE_WORKER or self.current_task_id == self.base_task_id:
            return
        try:
            self.raylet.notify("notify_blocked" if blocked else "notify_unblocked", self.worker_id)
        except RayConnectionError:
            pass

    def wait(self, refs, num_returns: int, timeout_s: float | None, fetch_local: bool = True):
        pairs = [(r.binary(), r.owner_address()) for r in refs]
        self._ensure_requested(pairs)
        ids = [oid for oid, _ in pairs]
        self._set_blocked(True)
        try:
            self.memory_store.wait(ids, num_returns, timeout_s)
        finally:
            self._set_blocked(False)
        ready, not_ready = [], []
        for ref in refs:
            if len(ready) < num_returns and self.memory_store.contains(ref.binary()):
                ready.append(ref)
            else:
                not_ready.append(ref)
        return ready, not_ready

    def as_future(self, ref):
        import concurrent.futures

        fut = concurrent.futures.Future()
        pair = (ref.binary(), ref.owner_address())
        self._ensure_requested([pair])

        def ready():
            try:
                fut.set_result(self._value(pair[0]))
            except BaseException as exc:  # noqa: BLE001
                fut.set_exception(exc)

        self.memory_store.on_ready([pair[0]], lambda: threading.Thread(target=ready).start())
        return fut

    # -- profiling ----------------------------------------------------------------------------
    def profile_span(self, event_type: str, name: str, extra=None):
        """A context manager recording one timeline span (a no-op with profiling off)."""
        if not self.config.profiling_enabled:
            return profiling.NO_SPAN
        return profiling.Span(self._profile_events, event_type, name, extra)

    def profile_events(self):
        """The event buffer, or None with profiling off (for per-task hot paths)."""
        return self._profile_events if self.config.profiling_enabled else None

    def submit_stamp(self):
        """A new task spec's SUBMITTED field: where the timeline's scheduling phase starts."""
        return time.time() if self.config.profiling_enabled else None

    # -- public-API helpers -------------------------------------------------------------
    def export_function(self, fn) -> bytes:
        return self.functions.export(fn)

    def resource_ids_now(self) -> dict:
        return self.resource_ids or {}

    def nodes(self):
        return cluster_info.nodes(self.gcs)

    def cluster_resources(self):
        return cluster_info.cluster_resources(self.gcs, self.config.heartbeat_timeout_s)

    def available_resources(self):
        return cluster_info.available_resources(self.gcs, self.config.heartbeat_timeout_s)

    def kill_actor(self, actor_id: bytes, no_restart: bool) -> None:
        self.actors.kill(actor_id, no_restart)

    def get_named_actor(self, name: str, namespace: str | None):
        return self.actors.get_named(name, namespace or self.namespace)

    def cancel(self, ref, force: bool) -> None:
        self.submitter.cancel(ref.binary(), force)

    def flush_profile_events(self) -> None:
        profiling.flush(self.gcs, self._profile_events, self.node_ip,
                        f"{self.mode}:{self.worker_id.hex()}")

    # -- lifecycle --------------------------------------------------------------------------------
    def _handle_exit(self, peer):
        if self.mode == MODE_WORKER:
            self.executor.stop()

    # -- actors -------------------------------------------------------------------------------------
    def create_actor(self, class_id, cls, methods, args, kwargs, opts) -> bytes:
        return self.actors.create(class_id, cls, methods, args, kwargs, opts)

    def submit_actor_task(self, actor_id, method, args, kwargs, num_returns):
        return self.actors.submit(actor_id, method, args, kwargs, num_returns)

    def actor_handle_created(self, actor_id):
        self.actors.handle_created(actor_id)

    def actor_handle_deleted(self, actor_id):
        self.defer(lambda: self.actors.handle_deleted(actor_id))

    def exit_actor(self):
        from ray._private.runtime.task_executor import ExitWorker

        raise ExitWorker()

    def shutdown(self) -> None:
        if self.shutting_down:
            return
        self._flusher.stop()
        with contextlib.suppress(Exception):
            self.flush_profile_events()
        self.shutting_down = True
        with contextlib.suppress(Exception):
            self.submitter.return_all()
        with contextlib.suppress(Exception):
            self.actors.shutdown()
        time.sleep(0)
        if self.mode == MODE_DRIVER:
            with contextlib.suppress(Exception):
                info = self.gcs.hget_obj(keys.JOBS, self.job_hex) or {}
                info["alive"] = False
                self.gcs.hset_obj(keys.JOBS, self.job_hex, info)
        with contextlib.suppress(Exception):
            self.plasma.disconnect()
        if self.node_processes is not None:
            with contextlib.suppress(Exception):
                self.raylet.call_sync("shutdown", timeout=2)
        self.loop.stop()
        with contextlib.suppress(Exception):
            self.gcs.close()
        if self.node_processes is not None:
            self.node_processes.kill_all()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.unix_path)
