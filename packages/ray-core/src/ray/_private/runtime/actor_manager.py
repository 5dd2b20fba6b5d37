"""Actors in the cluster runtime: creation and restarts (owner), calls (any caller).

The creator owns the actor: it leases a dedicated worker (``LeaseClient``, like any
task), runs the constructor there, publishes the actor's address in the GCS actor
table, and restarts it (up to ``max_restarts``) when its process dies. Callers send
method calls straight to the actor's worker over one connection each, which keeps
calls from one caller in order; while an actor is pending or restarting, calls
queue in the caller. A dead actor fails pending and later calls with
``RayActorError``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable

from ray._private import runtime_env
from ray._private.actor_methods import table_from_wire, table_to_wire
from ray._private.config import RayConfig as Config
from ray._private.gcs import keys
from ray._private.messages import (
    ActorCreation,
    ActorExited,
    CancelTask,
    Inline,
    OwnerAddress,
    ReturnObject,
    TaskDone,
    TaskKind,
    TaskSpec,
    WorkerKilled,
)
from ray._private.options import ActorOptions
from ray._private.rpc import RpcPeer
from ray._private.runtime import placement_groups
from ray._private.runtime import serialization as ser
from ray._private.runtime.actor_scope import ActorScope
from ray._private.runtime.context import JobState, TaskContext
from ray._private.runtime.interface import ActorInfo
from ray._private.runtime.lease_client import Lease, LeaseClient
from ray._private.runtime.objects import ObjectClient
from ray._private.runtime.peers import PeerPool
from ray._private.runtime.profiler import Profiler
from ray._private.runtime.task_executor import exit_message
from ray._private.runtime.task_ledger import PendingTask, TaskLedger, retries_exception
from ray._private.strategies import NodeAffinitySchedulingStrategy
from ray._private.transport import EventLoop
from ray.exceptions import (
    ActorDiedError,
    RayActorError,
    RayConnectionError,
    RayError,
    RayTaskError,
    TaskCancelledError,
)

logger = logging.getLogger(__name__)

PENDING, ALIVE, RESTARTING, DEAD = "PENDING", "ALIVE", "RESTARTING", "DEAD"


class _Client:
    """Caller-side view of one actor."""

    def __init__(self, actor_id: bytes):
        self.actor_id = actor_id
        self.state = PENDING
        self.address: OwnerAddress | None = None
        self.peer: RpcPeer | None = None
        self.creating_peer: RpcPeer | None = None
        self.queue: deque[tuple[PendingTask, list[bytes]]] = deque()  # not yet sent, in order
        self.inflight: dict[bytes, PendingTask] = {}
        self.death_cause = ""
        self.init_failed = False  # it died because its constructor raised
        self.max_task_retries = 0
        self.seq = 0
        self.subscribed = False
        self.owner_watched = False  # (a caller that does not own it: see _watch_owner)
        # A send of the queue is scheduled on the loop (see ActorManager.submit).
        self.send_scheduled = False

    def death_error(self) -> ActorDiedError:
        return ActorDiedError(self.death_cause, self.actor_id.hex(),
                              actor_init_failed=self.init_failed)


class _Owned:
    """Owner-side record of an actor this process created; handles its lease outcomes."""

    def __init__(self, manager: ActorManager, actor_id: bytes, spec: TaskSpec, shape: dict,
                 opts: ActorOptions, strategy):
        self.manager = manager
        self.actor_id = actor_id
        self.spec = spec
        self.shape = shape
        self.opts = opts
        self.strategy = strategy  # None, "SPREAD" or a NodeAffinitySchedulingStrategy
        self.restarts_left = opts.max_restarts
        self.num_restarts = 0
        self.no_restart = False
        # Why it will not be restarted, for its callers: exited on purpose (exit_actor,
        # __ray_terminate__, its handles went out of scope) or ray.kill.
        self.final_cause: str | None = None
        self.dead = False  # for good (killed, out of restarts, or failed)
        # Its worker said it exits on purpose: it ends itself, after its atexit handlers.
        self.exits_itself = False
        self.lease: Lease | None = None
        self.runtime_env: runtime_env.LeaseEnv | None = None  # dedicated workers
        self.pinned: list[bytes] = []

    @property
    def detached(self) -> bool:
        return self.opts.lifetime == "detached"

    # LeaseHandler (on the I/O thread)
    def lease_granted(self, lease: Lease) -> None:
        self.manager._leased(self, lease)

    def lease_failed(self, error: Exception | None) -> None:
        if error is not None:
            self.manager._mark_dead(self.actor_id, str(error))

    def lease_spilled(self, room: int) -> None:
        pass  # one lease per actor: room elsewhere changes nothing

    def lease_wanted(self) -> bool:
        return True  # the actor waits for this one lease


class ActorManager:
    def __init__(self, *, leases: LeaseClient, ledger: TaskLedger, objects: ObjectClient,
                 peers: PeerPool, gcs, job: JobState, context: TaskContext,
                 profiler: Profiler, config: Config, loop: EventLoop,
                 is_shutting_down: Callable[[], bool]):
        self._leases = leases
        self._ledger = ledger
        self._objects = objects
        self._peers = peers
        self._gcs = gcs
        self._job = job
        self._context = context
        self._profiler = profiler
        self._config = config
        self._loop = loop
        self._is_shutting_down = is_shutting_down
        self.lock = threading.RLock()
        self.clients: dict[bytes, _Client] = {}
        self.owned: dict[bytes, _Owned] = {}
        self._by_peer: dict[RpcPeer, bytes] = {}  # connections to actors -> actor id
        self.scope = ActorScope(
            clock=time.monotonic, on_out_of_scope=self._out_of_scope,
            recheck_at=self._recheck_scope_at,
            transit_grace_s=config.actor_handle_transit_grace_s)
        self._borrowed_from: dict[bytes, OwnerAddress] = {}  # borrowed actor -> its owner
        peers.handle("actor_exited", self._h_actor_exited)
        peers.handle("kill_actor", self._h_kill_actor)
        peers.handle("actor_borrowed", self._h_actor_borrowed)
        peers.handle("actor_returned", self._h_actor_returned)

    # -- GCS table ---------------------------------------------------------------------
    def _table_get(self, actor_id: bytes) -> dict | None:
        return self._gcs.hget_obj(keys.ACTORS, actor_id.hex())

    def _table_put(self, aid: bytes, **fields) -> dict:
        entry = self._table_get(aid) or {}
        entry.update(fields)
        self._gcs.hset_obj(keys.ACTORS, aid.hex(), entry)
        self._gcs.publish_obj(keys.channel_actor(aid.hex()), entry)
        return entry

    # -- creation (owner) ------------------------------------------------------------------
    def create(self, class_id: bytes, cls: type, methods: dict, args: tuple, kwargs: dict,
               opts: ActorOptions) -> bytes:
        job = self._job
        placed = placement_groups.place(opts, self._context.placement_group)
        opts = placed.opts
        if opts.lifetime is None and job.detached_actors_by_default:  # the job's default
            opts = dataclasses.replace(opts, lifetime="detached")
        shape = opts.resource_shape()
        # An actor no node can host yet is not refused: it waits (PENDING) for a node that
        # fits, and its raylet pushes Ray's "cannot be scheduled right now" warning.
        lease_env = None
        if opts.runtime_env is not None or job.runtime_env:  # packed before anything is sent
            lease_env = runtime_env.for_submission(
                job.runtime_env, opts.runtime_env, opts, owner_id=self._peers.address.worker_id,
                gcs=self._gcs, max_bytes=self._config.runtime_env_max_package_bytes)
        task_id = job.ids.next_task_id()
        actor_id = task_id
        namespace = opts.namespace or job.namespace
        # Arguments are encoded before the name is claimed: between the claim and the
        # table entry below nothing may fail, since racing creators take a claimed name
        # with no entry yet for an actor being created (see _claim_name).
        encoded = self._objects.encode_args(args, kwargs, f"{_qualified(cls)}.__init__")
        if opts.name:
            existing = self._claim_name(namespace, opts.name, actor_id)
            if existing is not None:
                if opts.get_if_exists:
                    return existing
                raise ValueError(
                    f"The name {opts.name} (namespace={namespace}) is already taken by a live "
                    f"actor: pick another name, get it with ray.get_actor({opts.name!r}), or "
                    "create it with .options(name=..., get_if_exists=True).")
        is_async = any(m.is_async for m in methods.values())
        spec = TaskSpec(
            task_id=task_id, job_id=job.hex, function_id=class_id,
            name=f"{cls.__name__}.__init__", args=encoded.args,
            kwarg_names=encoded.kwarg_names, num_returns=1, owner=self._peers.address,
            kind=TaskKind.ACTOR_CREATION, actor_id=actor_id,
            submitted_at=self._profiler.submit_stamp(), placement_group=placed.group,
            actor_creation=ActorCreation(
                actor_id, cls.__name__, opts.max_concurrency or (1000 if is_async else 1),
                is_async, detached=opts.lifetime == "detached",
                concurrency_groups=opts.concurrency_groups, name=opts.name),
            enable_task_events=opts.enable_task_events,
        )
        if opts.enable_task_events:
            self._profiler.task_events.submitted(
                task_id, name=spec.name, kind=TaskKind.ACTOR_CREATION, job_hex=job.hex,
                actor_id=actor_id, parent_task_id=self._context.task_id,
                waits_for_args=bool(encoded.deps))
        owned = _Owned(self, actor_id, spec, shape, opts, placed.strategy)
        owned.runtime_env = lease_env
        client = _Client(actor_id)
        client.max_task_retries = opts.max_task_retries
        with self.lock:
            self.owned[actor_id] = owned
            self.clients[actor_id] = client
        self.scope.own(actor_id, detached=opts.lifetime == "detached")
        self._table_put(
            actor_id, actor_id=actor_id.hex(), state=PENDING, class_name=cls.__name__,
            name=opts.name, namespace=namespace, owner=self._peers.address.to_wire(),
            address=None, max_restarts=opts.max_restarts,
            max_task_retries=opts.max_task_retries, num_restarts=0, job_id=job.hex,
            methods=table_to_wire(methods), detached=opts.lifetime == "detached",
            start_time=time.time(),
        )
        # Constructor arguments stay pinned while the actor may be (re)started.
        owned.pinned = encoded.pinned

        def start():
            self._objects.inline_resolved_args(spec)
            if encoded.deps and spec.enable_task_events:
                self._profiler.task_events.args_ready(task_id)
            self._lease(owned)

        if encoded.deps:
            self._objects.when_ready(encoded.deps, start)
        else:
            start()
        return actor_id

    def _claim_name(self, namespace: str, name: str, actor_id: bytes) -> bytes | None:
        """Register ``name`` for ``actor_id`` (atomic in the GCS, so racing creators from
        threads, tasks and drivers get one winner); the live actor holding it, if any."""
        key = keys.named_actor(namespace, name)
        for _ in range(3):
            if self._gcs.set(key, actor_id, only_if_absent=True):
                return None
            existing = self._gcs.get(key)
            if existing is None:
                continue  # released between the two reads: try again
            entry = self._table_get(existing)
            if entry is None or entry.get("state") != DEAD:
                # No entry yet: its creator claimed the name a moment ago and is writing
                # the entry now (create() does nothing that can fail in between).
                return existing
            # Held by a dead actor whose name was not released (its owner died): free it.
            self._release_name(namespace, name, existing)
        raise RayError(f"Could not register the actor name {name!r} in namespace "
                       f"{namespace!r}: other creators keep racing for it; try again.")

    def _release_name(self, namespace: str, name: str, actor_id: bytes) -> None:
        key = keys.named_actor(namespace, name)
        if self._gcs.get(key) == actor_id:  # (a newer actor may hold it already)
            self._gcs.delete(key)

    def _lease(self, owned: _Owned) -> None:
        strategy = owned.strategy
        self._leases.request(
            owned.shape, owned, self._on_actor_peer_lost, is_actor=True,
            detached=owned.detached, spread=strategy == "SPREAD",
            affinity=strategy if isinstance(strategy, NodeAffinitySchedulingStrategy) else None,
            runtime_env=None if owned.runtime_env is None else owned.runtime_env.wire(),
            retriable=owned.restarts_left != 0)  # the memory monitor kills such ones first

    def _leased(self, owned: _Owned, lease: Lease) -> None:
        if owned.dead:  # killed (ray.kill, handle gone) while the lease was pending
            lease.give_back(kill=True)
            return
        peer = lease.worker
        owned.lease = lease
        spec = owned.spec.copy()
        spec.resource_ids = lease.resource_ids
        creation = spec.actor_creation
        assert creation is not None, "an actor's creation spec carries ActorCreation"
        spec.actor_creation = ActorCreation(creation.actor_id, creation.class_name,
                                            creation.max_concurrency, creation.is_async,
                                            owned.num_restarts, owned.detached,
                                            creation.concurrency_groups, creation.name)
        task = PendingTask(spec, None, 0, spec.return_ids(), [])
        task.on_done = lambda t, returns, error: self._created(owned, lease, returns, error)
        with self.lock:
            self._by_peer[peer] = owned.actor_id
            client = self.clients[owned.actor_id]
            client.inflight[spec.task_id] = task
            client.creating_peer = peer
        try:
            peer.notify("push_tasks", [spec.to_wire()])
        except RayConnectionError:
            pass  # handled just below, or by the close callback
        if peer.closed:
            # The worker died before it was registered as this actor's, so its close
            # callback may have ignored it (this reply can run off the I/O thread): handle
            # the death here; _on_actor_peer_lost is idempotent per peer.
            self._on_actor_peer_lost(peer)

    def _stop_creating_worker(self, owned: _Owned) -> None:
        """Take back the worker leased for a constructor that must not finish: the
        raylet kills it (the worker itself would ignore kill_actor until it is one)."""
        if owned.lease is not None:
            owned.lease.give_back(kill=True)

    def _created(self, owned: _Owned, lease: Lease, returns: list[ReturnObject] | None,
                 error: BaseException | None) -> None:
        if owned.dead:  # killed while its constructor ran: stop the worker, stay dead
            self._stop_creating_worker(owned)
            return
        if error is not None or not returns:
            self._mark_dead(owned.actor_id, dead_text(owned.actor_id,
                                                      f"its worker died during creation: {error}"))
            return
        value = returns[0].value
        if type(value) is Inline and ser.is_error(value.metadata):
            err = ser.load_error(value.data)
            if isinstance(err, RayTaskError):  # the constructor raised: Ray's error for it
                died = ActorDiedError.from_task_error(err)
                self._mark_dead(owned.actor_id, died.error_msg, init_failed=True)
            elif isinstance(err, RayActorError):  # it called exit_actor() in __init__
                self._mark_dead(owned.actor_id, err.error_msg)
                if owned.exits_itself:
                    # Its worker ends itself once its atexit handlers ran (killing it now
                    # would cut them short); its raylet frees the lease when it exits.
                    return
            else:
                self._mark_dead(owned.actor_id, dead_text(
                    owned.actor_id, f"its creation failed: {err}"))
            self._stop_creating_worker(owned)  # its worker holds a half-built instance
            return
        self._table_put(
            owned.actor_id, state=ALIVE, address=lease.address.to_wire(),
            node_id=lease.node_id, num_restarts=owned.num_restarts, pid=None,
        )
        self._set_alive(owned.actor_id, lease.address)

    # -- caller side ----------------------------------------------------------------------
    def _client(self, actor_id: bytes) -> _Client:
        client = self.clients.get(actor_id)  # (a dict read is atomic: no lock to find one)
        if client is not None:
            return client
        with self.lock:
            client = self.clients.get(actor_id)
            if client is not None:
                return client
            client = self.clients[actor_id] = _Client(actor_id)
        self._subscribe(client)
        return client

    def _subscribe(self, client: _Client) -> None:
        if client.subscribed:
            return
        client.subscribed = True

        def read_table() -> None:
            if client.state == DEAD:  # final: nothing to read (no GCS call per dead actor)
                return
            entry = self._table_get(client.actor_id)
            if entry is not None:
                self._on_table_update(client.actor_id, entry)

        # Confirmed live before the table read below, so no update can fall in between;
        # after a pub/sub reconnect (updates published meanwhile are lost) it is read again.
        self._gcs.subscribe_obj(
            keys.channel_actor(client.actor_id.hex()),
            lambda _ch, entry: self._on_table_update(client.actor_id, entry),
            confirm=True, on_resync=read_table,
        )
        read_table()

    def _on_table_update(self, actor_id: bytes, entry: dict) -> None:
        client = self.clients.get(actor_id)
        if client is None or client.state == DEAD:
            return  # dead is final: a stale ALIVE read racing the death must not revive it
        client.max_task_retries = entry.get("max_task_retries", 0)
        state = entry.get("state")
        if state == ALIVE and entry.get("address"):
            address = OwnerAddress.from_wire(entry["address"])
            if client.state != ALIVE or client.address != address:
                self._set_alive(actor_id, address)
        elif state == DEAD:
            self._fail_all(client, entry.get("death_cause") or dead_text(actor_id, "unknown"),
                           bool(entry.get("init_failed")))
        elif actor_id not in self.owned:  # PENDING or RESTARTING, in its owner's hands
            self._watch_owner(client, entry)

    def _watch_owner(self, client: _Client, entry: dict) -> None:
        """A caller of an actor that is not running yet waits on its owner, which places
        or restarts it. An owner that dies first leaves it to nobody (a non-detached
        actor ends with its owner): keep a connection to the owner, and when it is lost
        or cannot be made, see whether the actor is orphaned (``_check_orphaned``)."""
        if client.owner_watched or entry.get("detached") or not entry.get("owner"):
            return
        client.owner_watched = True
        actor_id = client.actor_id

        def owner_lost(_peer: RpcPeer) -> None:
            if not self._is_shutting_down():  # (our own connections close at shutdown)
                # (a dying owner may still accept a connection: keep watching that one)
                threading.Thread(target=self._check_orphaned, args=(actor_id, owner_lost),
                                 name="actor-orphan-check", daemon=True).start()

        try:
            self._peers.connect_worker(OwnerAddress.from_wire(entry["owner"]), owner_lost)
        except OSError:
            self._check_orphaned(actor_id)

    def _set_alive(self, actor_id: bytes, address: OwnerAddress) -> None:
        client = self.clients.get(actor_id)
        if client is None:
            return
        try:
            peer = self._peers.connect_worker(address, self._on_actor_peer_lost)
        except OSError as exc:
            # Its process is gone already: the owner restarts it or marks it dead, and
            # the table update that follows reaches us; if its owner is gone too, nobody
            # will (a non-detached actor shares its owner's fate).
            logger.info("actor %s is unreachable at %s: %s", actor_id.hex(), address, exc)
            self._check_orphaned(actor_id)
            return
        with self.lock:
            self._by_peer[peer] = actor_id
            client.state = ALIVE
            client.address = address
            client.peer = peer
        self._pump(client)

    def submit(self, actor_id: bytes, method: str, args: tuple, kwargs: dict,
               num_returns: int, enable_task_events: bool = True, *, name: str | None = None,
               concurrency_group: str | None = None, retry_exceptions: bool | tuple = False,
               max_task_retries: int | None = None) -> list:
        client = self._client(actor_id)
        encoded = self._objects.encode_args(args, kwargs, method)
        task_id = self._job.ids.next_task_id()
        spec = TaskSpec(
            task_id=task_id, job_id=self._job.hex, function_id=b"", name=name or method,
            args=encoded.args, kwarg_names=encoded.kwarg_names, num_returns=num_returns,
            owner=self._peers.address, kind=TaskKind.ACTOR_METHOD, actor_id=actor_id,
            method=method, submitted_at=self._profiler.submit_stamp(),
            enable_task_events=enable_task_events, concurrency_group=concurrency_group,
        )
        refs = self._objects.new_return_refs(task_id, num_returns)
        task = PendingTask(spec, None, client.max_task_retries if max_task_retries is None
                           else max_task_retries, [r.binary() for r in refs], encoded.pinned,
                           retry_exceptions=retry_exceptions)
        if enable_task_events:
            self._profiler.task_events.submitted(
                task_id, name=method, kind=TaskKind.ACTOR_METHOD, job_hex=self._job.hex,
                actor_id=actor_id, parent_task_id=self._context.task_id,
                waits_for_args=bool(encoded.deps))
        with self.lock:
            if client.state == DEAD:
                self._ledger.failed(task, client.death_error())
                return refs
            client.seq += 1  # (numbered in the order the calls are queued)
            spec.seq = client.seq
            client.queue.append((task, encoded.deps))
            # Calls made while earlier ones are still running go out together: the loop
            # sends the queue once, soon (the actor is busy meanwhile), instead of one
            # message per call from the caller's thread. A call to an idle actor goes
            # out at once, so a lone call's latency is unchanged.
            deferred = bool(client.inflight) and not encoded.deps
            already = deferred and client.send_scheduled
            if deferred:
                client.send_scheduled = True
        if encoded.deps:
            self._objects.when_ready(encoded.deps, lambda: self._args_ready(client, task))
        if not deferred:
            self._pump(client)
        elif not already:
            self._loop.call_soon(self._scheduled_pump, client)
        return refs

    def _scheduled_pump(self, client: _Client) -> None:
        with self.lock:
            client.send_scheduled = False
        self._pump(client)

    def _args_ready(self, client: _Client, task: PendingTask) -> None:
        if task.spec.enable_task_events:
            self._profiler.task_events.args_ready(task.spec.task_id)
        self._pump(client)

    def _pump(self, client: _Client) -> None:
        batch = []
        with self.lock:
            if client.state != ALIVE or client.peer is None:
                return
            while client.queue:
                task, deps = client.queue[0]
                if deps and not self._objects.all_ready(deps):
                    break
                client.queue.popleft()
                if deps:
                    self._objects.inline_resolved_args(task.spec)
                client.inflight[task.spec.task_id] = task
                batch.append(task.spec.to_wire())
            peer = client.peer
        if batch:
            try:
                peer.notify("push_tasks", batch)
            except RayConnectionError:
                pass  # the close callback re-queues or fails them

    def runs_calls_on(self, peer: RpcPeer) -> bool:
        """Whether ``peer`` is an actor's worker (its results come here)."""
        return peer in self._by_peer

    def tasks_done(self, peer: RpcPeer, done: list[TaskDone]) -> None:
        client = self.clients.get(self._by_peer.get(peer, b""))
        for item in done:
            task = None
            if client is not None:
                with self.lock:
                    task = client.inflight.pop(item.task_id, None)
            if task is not None and task.on_done is not None \
                    and task.spec.kind == TaskKind.ACTOR_CREATION:
                task.on_done(task, item.returns, None)
                continue
            if client is not None and task is not None and task.retry_exceptions \
                    and retries_exception(task, item):  # the call raised: run it again
                if task.retries_left > 0:
                    task.retries_left -= 1
                with self.lock:
                    client.queue.appendleft((task, []))
                self._pump(client)
                continue
            self._ledger.completed(task, item.returns, keep_lineage=False,
                                   generator_items=item.generator_items)

    # -- failures --------------------------------------------------------------------------
    def _on_actor_peer_lost(self, peer: RpcPeer) -> None:
        with self.lock:
            actor_id = self._by_peer.pop(peer, None)  # each connection's loss is handled once
        if actor_id is None:
            return
        client = self.clients.get(actor_id)
        if client is None:
            return
        with self.lock:
            if client.peer is not peer and client.creating_peer is not peer:
                return
            if client.creating_peer is peer:
                client.creating_peer = None  # handle each peer's death once
            client.peer = None
            dead = client.state == DEAD  # dead is final: it does not become RESTARTING
            if not dead:
                client.state = RESTARTING
            lost = list(client.inflight.values())
            client.inflight.clear()
        if dead:
            for task in lost:
                if task.spec.kind != TaskKind.ACTOR_CREATION:
                    self._ledger.failed(task, client.death_error())
            return
        owned = self.owned.get(actor_id)
        lease = owned.lease if owned is not None else None
        if lease is None or self._is_shutting_down():
            self._actor_lost(actor_id, client, lost, owned, None)
        else:  # the owner asks its raylet whether the memory monitor killed it
            lease.ask_death_cause(
                lambda cause: self._actor_lost(actor_id, client, lost, owned, cause))

    def _actor_lost(self, actor_id: bytes, client: _Client, lost: list, owned: _Owned | None,
                    cause: WorkerKilled | None) -> None:
        oom = cause.message.rstrip(".") if cause is not None \
            and cause.reason == WorkerKilled.OUT_OF_MEMORY else None
        creation = [t for t in lost if t.spec.kind == TaskKind.ACTOR_CREATION]
        final = self._final_cause(actor_id, owned)
        retry = []
        for task in lost:
            if task.spec.kind == TaskKind.ACTOR_CREATION:
                continue
            if task.cancelled:  # ray.cancel'd: never retried (as Ray)
                self._ledger.failed(task, TaskCancelledError(task.spec.task_id.hex()))
            elif final is not None:  # exited on purpose or killed: no retry, and say why
                self._ledger.failed(task, ActorDiedError(final, actor_id.hex()))
            elif task.retries_left != 0:
                task.retries_left -= 1
                retry.append(task)
            elif oom is not None:
                self._ledger.failed(task, ActorDiedError(dead_text(
                    actor_id, f"the memory monitor killed its worker. {oom}"), actor_id.hex()))
            else:
                self._ledger.failed(task, RayActorError(
                    "The actor died while running this call (its process exited or was "
                    "killed).", actor_id.hex()))
        with self.lock:
            for task in reversed(retry):
                client.queue.appendleft((task, []))
        if owned is not None:
            self._owner_handle_death(owned, bool(creation), oom)
        else:
            entry = self._table_get(actor_id)
            if entry is not None:
                self._on_table_update(actor_id, entry)

    def _owner_handle_death(self, owned: _Owned, during_creation: bool,
                            oom: str | None = None) -> None:
        """``oom``: the memory monitor's message when it killed the worker."""
        if self._is_shutting_down() or owned.dead:
            return
        final = self._final_cause(owned.actor_id, owned)
        if final is not None:
            self._mark_dead(owned.actor_id, final)
            return
        if owned.restarts_left == 0:
            self._mark_dead(owned.actor_id, dead_text(
                owned.actor_id, f"the memory monitor killed its worker and max_restarts is "
                f"exhausted (set max_restarts to restart it). {oom}" if oom is not None else
                "its worker process died unexpectedly and max_restarts is exhausted (set "
                "max_restarts to restart it)"))
            return
        if owned.restarts_left > 0:
            owned.restarts_left -= 1
        owned.num_restarts += 1
        self._table_put(owned.actor_id, state=RESTARTING, address=None,
                        num_restarts=owned.num_restarts)
        self._lease(owned)

    def _final_cause(self, actor_id: bytes, owned: _Owned | None) -> str | None:
        """Why the actor is gone for good if it ended on purpose (exited, or ray.kill'd
        without restart), else None. The owner knows; other callers read the table."""
        if owned is not None and owned.final_cause is not None:
            return owned.final_cause
        try:
            entry = self._table_get(actor_id) or {}
        except RayError as exc:  # the GCS is down: treat it as an unexpected death
            logger.warning("could not read actor %s's state: %s", actor_id.hex(), exc)
            return None
        return entry.get("final_cause")

    def _mark_dead(self, actor_id: bytes, text: str, *, init_failed: bool = False) -> None:
        """The actor is gone for good; ``text`` is what its callers' errors say."""
        owned = self.owned.get(actor_id)
        if owned is not None:
            owned.dead = True  # first: failing the creation task below reaches _created
        try:
            entry = self._table_put(actor_id, state=DEAD, address=None, death_cause=text,
                                    init_failed=init_failed, end_time=time.time())
            if owned is not None and entry.get("name"):  # the name is free again
                self._release_name(entry.get("namespace") or self._job.namespace,
                                   entry["name"], actor_id)
        except RayError as exc:
            # Other callers learn of the death when they next read the table (or never,
            # if the GCS is gone for good); our own calls fail below either way.
            logger.warning("could not record actor %s as DEAD in the GCS: %s", actor_id.hex(),
                           exc)
        client = self.clients.get(actor_id)
        if client is not None:
            self._fail_all(client, text, init_failed)
        if owned is not None and owned.pinned:
            pinned, owned.pinned = owned.pinned, []
            self._objects.unpin(pinned)

    def _fail_all(self, client: _Client, cause: str, init_failed: bool = False) -> None:
        with self.lock:
            client.state = DEAD
            client.death_cause = cause
            client.init_failed = init_failed
            pending = [t for t, _ in client.queue] + list(client.inflight.values())
            client.queue.clear()
            client.inflight.clear()
        for task in pending:
            self._ledger.failed(task, client.death_error())

    def _check_orphaned(self, actor_id: bytes,
                        on_owner_lost: Callable[[RpcPeer], None] | None = None) -> None:
        """An actor we call (not own) is unreachable: if it is not detached and its owner
        is gone as well, it is dead for good (its raylet ended it with its owner), so mark
        it so and fail the calls waiting for it."""
        if actor_id in self.owned:
            return
        try:
            entry = self._table_get(actor_id) or {}
        except RayError as exc:
            logger.warning("could not read actor %s's state: %s", actor_id.hex(), exc)
            return
        if entry.get("state") == DEAD or entry.get("detached") or not entry.get("owner"):
            return
        try:
            self._peers.connect_worker(OwnerAddress.from_wire(entry["owner"]), on_owner_lost)
            return  # the owner lives: it restarts the actor or marks it dead
        except OSError:
            pass
        text = dead_text(actor_id, "its owner (the driver or worker that created it) died, "
                         "and a non-detached actor ends with its owner (create it with "
                         "lifetime='detached' to keep it)")
        try:
            self._table_put(actor_id, state=DEAD, address=None, death_cause=text,
                            end_time=time.time())
            if entry.get("name"):
                self._release_name(entry.get("namespace") or self._job.namespace,
                                   entry["name"], actor_id)
        except RayError as exc:
            logger.warning("could not record actor %s as DEAD: %s", actor_id.hex(), exc)
        client = self.clients.get(actor_id)
        if client is not None:
            self._fail_all(client, text)

    def _set_final(self, owned: _Owned, text: str) -> None:
        """The owned actor will not be restarted, and why (recorded for other callers)."""
        owned.no_restart = True
        if owned.final_cause is None:
            owned.final_cause = text
        try:
            self._table_put(owned.actor_id, final_cause=owned.final_cause)
        except RayError as exc:
            logger.warning("could not record why actor %s ends: %s", owned.actor_id.hex(), exc)

    def _h_actor_exited(self, peer: RpcPeer, wire: list) -> None:
        """Its worker: the actor exits on purpose (sent on the connection its owner made,
        so it arrives before that connection closes)."""
        msg = ActorExited.from_wire(wire)
        owned = self.owned.get(msg.actor_id)
        if owned is not None:
            owned.exits_itself = True
            self._set_final(owned, exit_message(msg.actor_id, msg.detail))

    def _h_kill_actor(self, peer: RpcPeer, actor_id: bytes) -> None:
        if self._context.actor_id == actor_id:
            os._exit(1)

    # -- kill / names / handles ----------------------------------------------------------------
    def kill(self, actor_id: bytes, no_restart: bool) -> None:
        if no_restart:
            text = dead_text(actor_id, "it was killed by `ray.kill`")
            owned = self.owned.get(actor_id)
            if owned is not None:
                self._set_final(owned, text)
            else:
                self._table_put(actor_id, killed=True, final_cause=text)
        client = self._client(actor_id)
        entry = self._table_get(actor_id) or {}
        address = client.address
        if address is None and entry.get("address"):
            address = OwnerAddress.from_wire(entry["address"])
        if address is None:
            if no_restart:
                self._mark_dead(actor_id, dead_text(
                    actor_id, "it was killed by `ray.kill` before it started"))
                owned = self.owned.get(actor_id)
                if owned is not None:  # its constructor may be running already
                    self._stop_creating_worker(owned)
            return
        try:
            peer = self._peers.connect_worker(address, self._on_actor_peer_lost)
            with self.lock:
                self._by_peer.setdefault(peer, actor_id)
            peer.notify("kill_actor", actor_id)
        except (OSError, RayConnectionError) as exc:
            logger.info("actor %s already unreachable when killed: %s", actor_id.hex(), exc)

    def cancel(self, task_id: bytes, force: bool, recursive: bool) -> None:
        """``ray.cancel`` of an actor call made here: a call not yet sent fails with
        ``TaskCancelledError``; one the actor runs gets a ``CancelTask`` (its worker
        interrupts it). ``force`` is refused for actor calls, as in Ray."""
        queued = running = None
        with self.lock:
            for client in self.clients.values():
                queued = next((e for e in client.queue if e[0].spec.task_id == task_id), None)
                running = client.inflight.get(task_id)
                if queued is not None or running is not None:
                    break
            else:
                return  # not a call made here, or already finished: nothing to cancel
            if force:
                raise ValueError("force=True is not supported for actor tasks: use "
                                 "ray.kill(actor) to stop the actor, or force=False.")
            if queued is not None:
                client.queue.remove(queued)
            peer = client.peer
        if queued is not None:
            queued[0].cancelled = True
            self._ledger.failed(queued[0], TaskCancelledError(task_id.hex()))
            return
        assert running is not None, "found either queued or running above"
        running.cancelled = True
        if peer is not None:
            try:
                peer.notify("cancel_task", CancelTask(task_id, False, recursive).to_wire())
            except RayConnectionError:
                pass  # the actor's worker is gone: its calls fail with RayActorError

    def named(self, name: str, namespace: str) -> ActorInfo:
        actor_id = self._gcs.get(keys.named_actor(namespace, name))
        entry = self._table_get(actor_id) if actor_id else None
        if entry is None or entry.get("state") == DEAD:
            raise ValueError(
                f"Failed to look up actor {name!r} in namespace {namespace!r}: no live actor "
                "has that name (check the name and namespace, and that it was created)."
            )
        return ActorInfo(actor_id, entry.get("class_name", "Actor"),
                         table_from_wire(entry.get("methods") or {}))

    def info(self, actor_id: bytes) -> ActorInfo:
        """What a handle to ``actor_id`` needs (``RuntimeContext.current_actor``)."""
        entry = self._table_get(actor_id)
        if entry is None:
            raise ValueError(f"No actor {actor_id.hex()} is known to the cluster.")
        return ActorInfo(actor_id, entry.get("class_name", "Actor"),
                         table_from_wire(entry.get("methods") or {}))

    def handle_created(self, actor_id: bytes) -> bool:
        """A handle object was made in this process (see ``ActorScope``). True: the first
        of an actor another process owns: call ``start_borrow`` soon."""
        return self.scope.created(actor_id)

    def handle_pickled(self, actor_id: bytes) -> None:
        self.scope.pickled(actor_id)

    def handle_deleted(self, actor_id: bytes) -> None:
        if self.scope.deleted(actor_id):
            address = self._borrowed_from.pop(actor_id, None)
            if address is not None:
                self._tell_owner(address, "actor_returned", actor_id)

    def start_borrow(self, actor_id: bytes) -> None:
        """Tell its owner that this process holds a handle to ``actor_id``."""
        try:
            entry = self._table_get(actor_id) or {}
        except RayError as exc:
            logger.warning("could not read actor %s's owner: %s", actor_id.hex(), exc)
            return
        if not entry.get("owner") or entry.get("detached") or entry.get("state") == DEAD:
            return  # (a detached actor's lifetime is not its handles')
        address = OwnerAddress.from_wire(entry["owner"])
        if address.worker_id == self._peers.address.worker_id:
            return
        self._borrowed_from[actor_id] = address
        self._tell_owner(address, "actor_borrowed", actor_id)

    def _tell_owner(self, address: OwnerAddress, method: str, actor_id: bytes) -> None:
        try:
            self._peers.connect_worker(address).notify(method, actor_id)
        except (OSError, RayConnectionError):
            pass  # the owner is gone, and its non-detached actors with it

    def _recheck_scope_at(self, delay_s: float, actor_id: bytes) -> None:
        self._loop.call_later(delay_s, self.scope.recheck, actor_id)

    def _h_actor_borrowed(self, peer: RpcPeer, actor_id: bytes) -> None:
        self.scope.borrowed(actor_id, peer)
        self._peers.on_lost(peer, self.scope.borrower_gone)

    def _h_actor_returned(self, peer: RpcPeer, actor_id: bytes) -> None:
        self.scope.returned(actor_id, peer)

    def _out_of_scope(self, actor_id: bytes) -> None:
        """No handle to an actor we own is left anywhere: as Ray 2.x, a non-detached
        actor, named or not, ends then (handles from ray.get_actor do not keep it)."""
        owned = self.owned.get(actor_id)
        if owned is None:
            return
        owned.no_restart = True
        if self._is_shutting_down():
            return
        if owned.final_cause is None:
            owned.final_cause = dead_text(actor_id, "all references to the actor were "
                                          "removed (its handles went out of scope)")
        client = self.clients.get(actor_id)
        if owned.lease is None and not owned.dead and (
                client is None or not (client.queue or client.inflight)):
            # Not placed yet (waiting for a node that fits, maybe forever) and no call
            # waits for it: a terminate call would queue behind a creation that may never
            # come, so it ends here; a lease granted later is given back (_leased). (With
            # calls waiting, as in Ray, they run first and the terminate call follows.)
            self._mark_dead(actor_id, owned.final_cause)
            return
        try:
            self.submit(actor_id, "__ray_terminate__", (), {}, 0)
        except RayError as exc:
            logger.debug("could not terminate actor %s: %s", actor_id.hex(), exc)

    def owns_live(self) -> bool:
        """Whether an actor this process owns (not detached: the GCS keeps those) has
        not ended: it ends with this process."""
        return any(not owned.dead and not owned.detached for owned in list(self.owned.values()))

    def shutdown(self) -> None:
        for owned in list(self.owned.values()):
            owned.no_restart = True
            if owned.lease is None and not owned.dead and not owned.detached:
                # Still waiting for a node: no worker of it exists whose end would be
                # noticed (see _check_orphaned), so its owner records that it goes too.
                self._mark_dead(owned.actor_id, dead_text(
                    owned.actor_id, "its owner (the driver or worker that created it) "
                    "exited before it was placed, and a non-detached actor ends with its "
                    "owner (create it with lifetime='detached' to keep it)"))


def dead_text(actor_id: bytes, cause: str) -> str:
    return f"The actor {actor_id.hex()} is dead: {cause}."


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


__all__ = ["ActorManager", "dead_text"]
