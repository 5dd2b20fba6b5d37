"""Actors in the cluster runtime: creation and restarts (owner), calls (any caller).

The creator owns the actor: it leases a dedicated worker, runs the constructor
there, publishes the actor's address in the GCS actor table, and restarts it
(up to ``max_restarts``) when its process dies. Callers send method calls
straight to the actor's worker over one connection each, which keeps calls
from one caller in order; while an actor is pending or restarting, calls
queue in the caller. A dead actor fails pending and later calls with
``RayActorError``.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque

from ray._private import runtime_env
from ray._private.gcs import keys
from ray._private.rpc import RemoteError
from ray._private.runtime import placement_groups
from ray._private.runtime.task_submitter import (
    KIND_ACTOR_CREATION,
    KIND_ACTOR_METHOD,
    OPTIONS,
    TASK_ID,
    PendingTask,
    first_raylet,
)
from ray.exceptions import (
    ActorPlacementGroupRemoved,
    RayActorError,
    RayConnectionError,
    TaskUnschedulableError,
)

logger = logging.getLogger(__name__)

PENDING, ALIVE, RESTARTING, DEAD = "PENDING", "ALIVE", "RESTARTING", "DEAD"


class _Client:
    """Caller-side view of one actor."""

    def __init__(self, actor_id: bytes):
        self.actor_id = actor_id
        self.state = PENDING
        self.address = None
        self.peer = None
        self.queue: deque = deque()  # (task, deps) not yet sent, in call order
        self.inflight: dict[bytes, PendingTask] = {}
        self.death_cause = ""
        self.max_task_retries = 0
        self.seq = 0
        self.subscribed = False


class _Owned:
    """Owner-side record of an actor this process created."""

    def __init__(self, actor_id, spec, shape, opts, methods):
        self.actor_id = actor_id
        self.spec = spec
        self.shape = shape
        self.opts = opts
        self.methods = methods
        self.restarts_left = opts.max_restarts
        self.num_restarts = 0
        self.handles = 0
        self.no_restart = False
        self.dead = False  # for good (killed, out of restarts, or failed)
        self.worker_id = None
        self.raylet = None
        self.runtime_env = None  # runtime_env.LeaseEnv: its workers are dedicated to it
        self.pinned: list[bytes] = []


class ActorManager:
    def __init__(self, core):
        self.core = core
        self.lock = threading.RLock()
        self.clients: dict[bytes, _Client] = {}
        self.owned: dict[bytes, _Owned] = {}
        core.handlers["actor_exited"] = self._h_actor_exited
        core.handlers["kill_actor"] = self._h_kill_actor

    # -- GCS table ---------------------------------------------------------------------
    def _table_get(self, actor_id: bytes) -> dict | None:
        return self.core.gcs.hget_obj(keys.ACTORS, actor_id.hex())

    def _table_put(self, aid: bytes, **fields) -> dict:
        entry = self._table_get(aid) or {}
        entry.update(fields)
        self.core.gcs.hset_obj(keys.ACTORS, aid.hex(), entry)
        self.core.gcs.publish_obj(keys.channel_actor(aid.hex()), entry)
        return entry

    # -- creation (owner) ------------------------------------------------------------------
    def create(self, class_id, cls, methods, args, kwargs, opts) -> bytes:
        core = self.core
        strategy = opts.strategy()
        if strategy is None and core.placement_group is not None and core.placement_group[2]:
            opts = placement_groups.captured(opts, core.placement_group)
            strategy = opts.strategy()
        shape = opts.resource_shape()
        self._check_feasible(cls.__name__, opts.placement_shape())
        lease_env = None
        if opts.runtime_env is not None or core.runtime_env:  # packed before anything is sent
            lease_env = runtime_env.for_submission(core, opts.runtime_env, opts)
        encoded, kw_names, deps, pinned = core.build_args(args, kwargs)
        task_id = core.ids.next_task_id()
        actor_id = task_id
        namespace = opts.namespace or core.namespace
        if opts.name:
            key = keys.named_actor(namespace, opts.name)
            existing = core.gcs.get(key)
            if existing is not None:
                entry = self._table_get(existing)
                if entry is not None and entry.get("state") != DEAD:
                    raise ValueError(
                        f"An actor named {opts.name!r} already exists in namespace "
                        f"{namespace!r}; pick another name or ray.get_actor({opts.name!r})."
                    )
            core.gcs.set(key, actor_id)
        is_async = any(is_async for _, is_async in methods.values())
        options = {
            "actor_id": actor_id,
            "max_concurrency": opts.max_concurrency or (1000 if is_async else 1),
            "is_async": is_async,
            "class_name": cls.__name__,
        }
        if hasattr(strategy, "placement_group"):
            options["pg"] = placement_groups.spec_entry(strategy)
            strategy = None  # the rewritten shape steers it
        spec = [
            task_id, core.job_hex, class_id, f"{cls.__name__}.__init__", encoded, kw_names, 1,
            core.address, options, None, KIND_ACTOR_CREATION, actor_id, None, 0, core.submit_stamp(),
        ]
        owned = _Owned(actor_id, spec, shape, opts, methods)
        owned.runtime_env = lease_env
        owned.lease_strategy = strategy  # None, "SPREAD" or NodeAffinitySchedulingStrategy
        client = _Client(actor_id)
        client.max_task_retries = opts.max_task_retries
        with self.lock:
            self.owned[actor_id] = owned
            self.clients[actor_id] = client
        self._table_put(
            actor_id, actor_id=actor_id.hex(), state=PENDING, class_name=cls.__name__,
            name=opts.name, namespace=namespace, owner=core.address, address=None,
            max_restarts=opts.max_restarts, max_task_retries=opts.max_task_retries,
            num_restarts=0, job_id=core.job_hex, methods=methods,
            detached=opts.lifetime == "detached", start_time=time.time(),
        )
        # Constructor arguments stay pinned while the actor may be (re)started.
        owned.pinned = pinned

        def start():
            core.inline_resolved_args(spec)
            self._lease_first(owned)

        if deps:
            core.memory_store.on_ready(deps, start)
        else:
            start()
        return actor_id

    def _check_feasible(self, name, shape):
        if not shape:
            return
        try:
            total = self.core.cluster_resources()
        except Exception:
            return
        missing = {k: v for k, v in shape.items() if total.get(k, 0) < v}
        if missing:
            from ray.exceptions import RayError

            raise RayError(
                f"Actor {name} needs {shape} but the whole cluster has only "
                f"{ {k: total.get(k, 0) for k in shape} }: not enough "
                f"{', '.join(missing)}. Start ray with more (e.g. ray.init(num_gpus=...) or "
                "resources={...}) or ask the actor for less."
            )

    def _lease_first(self, owned: _Owned):
        """Lease from the raylet the actor's strategy names (ours by default)."""
        try:
            raylet, spilled = first_raylet(self.core, owned.lease_strategy)
        except TaskUnschedulableError as exc:
            self._mark_dead(owned.actor_id, str(exc))
            return
        self._lease_and_start(owned, raylet, spilled)

    def _lease_and_start(self, owned: _Owned, raylet, spilled: bool):
        core = self.core
        spread = "SPREAD" if owned.lease_strategy == "SPREAD" else None
        fut = raylet.call(
            "request_lease", owned.shape, core.job_id_bytes, True, spilled, core.address,
            owned.opts.lifetime == "detached",
            *(() if owned.runtime_env is None and spread is None else (spread,)),
            *(() if owned.runtime_env is None else (owned.runtime_env.wire(),)),
        )

        def on_reply(f):
            try:
                reply = f.result()
            except (RemoteError, RayConnectionError) as exc:
                if raylet is not core.raylet and not core.shutting_down:
                    # The raylet we spilled to went away with its node: ask ours again.
                    core.loop.call_later(0.1, self._lease_first, owned)
                    return
                self._mark_dead(owned.actor_id, f"could not lease a worker: {exc}")
                return
            if "spillback" in reply:
                try:
                    target = core.raylet_peer_for(reply["spillback"])
                except (OSError, RayConnectionError):
                    # Spilled to a node that just died (this runs on the I/O thread, so
                    # raising here would close the connection it came from): retry locally.
                    core.loop.call_later(0.1, self._lease_first, owned)
                    return
                self._lease_and_start(owned, target, True)
                return
            if "infeasible" in reply:
                return
            if "placement_group_removed" in reply:
                self._mark_dead(owned.actor_id, str(ActorPlacementGroupRemoved(
                    reply["placement_group_removed"])))
                return
            if "runtime_env_error" in reply:
                self._mark_dead(owned.actor_id, reply["runtime_env_error"])
                return
            if owned.dead:  # killed (ray.kill, handle gone) while the lease was pending
                with contextlib.suppress(RayConnectionError):
                    raylet.notify("return_lease", reply["worker_id"], True)
                return
            try:
                peer = core.connect_worker(reply["address"], self._on_actor_peer_lost)
            except (OSError, RayConnectionError) as exc:
                # The leased worker died before we reached it: a death during creation
                # (restarts if max_restarts allows), not a reason to give up at once.
                logger.info("cannot reach the worker leased for actor %s: %s",
                            owned.actor_id.hex(), exc)
                with contextlib.suppress(RayConnectionError):
                    raylet.notify("return_lease", reply["worker_id"], True)
                self._owner_handle_death(owned, during_creation=True)
                return
            peer.context["actor"] = owned.actor_id
            owned.worker_id = reply["worker_id"]
            owned.raylet = raylet
            owned.node_id = reply.get("node_id")
            spec = list(owned.spec)
            spec[9] = reply.get("resource_ids")
            spec[OPTIONS] = dict(spec[OPTIONS], num_restarts=owned.num_restarts,
                                 detached=owned.opts.lifetime == "detached")
            task = PendingTask(spec, None, 0, [spec[TASK_ID] + (1).to_bytes(4, "little")], [])
            task.on_done = lambda t, results, error: self._created(owned, reply, results, error)
            with self.lock:
                client = self.clients[owned.actor_id]
                client.inflight[spec[TASK_ID]] = task
                client.creating_peer = peer
            try:
                peer.notify("push_tasks", [spec])
            except RayConnectionError:
                pass
            if peer.closed:
                # The worker died before context["actor"] was set, so its close callback
                # may have ignored it (this reply can run off the I/O thread): handle the
                # death here; _on_actor_peer_lost is idempotent per peer.
                self._on_actor_peer_lost(peer)

        fut.add_done_callback(on_reply)

    def _stop_creating_worker(self, owned: _Owned) -> None:
        """Take back the worker leased for a constructor that must not finish: the
        raylet kills it (the worker itself would ignore kill_actor until it is one)."""
        if owned.worker_id is not None and owned.raylet is not None:
            with contextlib.suppress(RayConnectionError):
                owned.raylet.notify("return_lease", owned.worker_id, True)

    def _created(self, owned: _Owned, lease_reply, results, error):
        if owned.dead:  # killed while its constructor ran: stop the worker, stay dead
            self._stop_creating_worker(owned)
            return
        if error is not None:
            self._mark_dead(owned.actor_id, f"its worker died during creation: {error}")
            return
        kind, meta = results[0][1], results[0][2]
        from ray._private.runtime import serialization as ser

        if kind == 0 and ser.is_error(meta):
            err = ser.load_error(results[0][3])
            self._mark_dead(owned.actor_id, f"its constructor raised:\n{err}", cause_error=err)
            return
        self._table_put(
            owned.actor_id, state=ALIVE, address=lease_reply["address"],
            node_id=lease_reply.get("node_id"), num_restarts=owned.num_restarts,
            pid=None,
        )
        self._set_alive(owned.actor_id, lease_reply["address"])

    # -- caller side ----------------------------------------------------------------------
    def _client(self, actor_id: bytes) -> _Client:
        with self.lock:
            client = self.clients.get(actor_id)
            if client is not None:
                return client
            client = self.clients[actor_id] = _Client(actor_id)
        self._subscribe(client)
        return client

    def _subscribe(self, client: _Client):
        if client.subscribed:
            return
        client.subscribed = True
        # Confirmed live before the table read below, so no update can fall in between.
        self.core.gcs.subscribe_obj(
            keys.channel_actor(client.actor_id.hex()),
            lambda _ch, entry: self._on_table_update(client.actor_id, entry),
            confirm=True,
        )
        entry = self._table_get(client.actor_id)
        if entry is not None:
            self._on_table_update(client.actor_id, entry)

    def _on_table_update(self, actor_id: bytes, entry: dict):
        client = self.clients.get(actor_id)
        if client is None or client.state == DEAD:
            return  # dead is final: a stale ALIVE read racing the death must not revive it
        client.max_task_retries = entry.get("max_task_retries", 0)
        state = entry.get("state")
        if state == ALIVE and entry.get("address"):
            if client.state != ALIVE or client.address != entry["address"]:
                self._set_alive(actor_id, entry["address"])
        elif state == DEAD:
            self._fail_all(client, entry.get("death_cause", "the actor is dead"))

    def _set_alive(self, actor_id: bytes, address):
        client = self.clients.get(actor_id)
        if client is None:
            return
        try:
            peer = self.core.connect_worker(address, self._on_actor_peer_lost)
        except OSError:
            return
        peer.context["actor"] = actor_id
        with self.lock:
            client.state = ALIVE
            client.address = address
            client.peer = peer
        self._pump(client)

    def submit(self, actor_id: bytes, method: str, args, kwargs, num_returns: int):
        core = self.core
        client = self._client(actor_id)
        encoded, kw_names, deps, pinned = core.build_args(args, kwargs)
        task_id = core.ids.next_task_id()
        with self.lock:
            client.seq += 1
            seq = client.seq
        spec = [
            task_id, core.job_hex, b"", method, encoded, kw_names, num_returns, core.address,
            None, None, KIND_ACTOR_METHOD, actor_id, method, seq, core.submit_stamp(),
        ]
        refs = core.new_return_refs(task_id, num_returns)
        task = PendingTask(spec, None, client.max_task_retries, [r.binary() for r in refs], pinned)
        with self.lock:
            if client.state == DEAD:
                core.fail_task(task, RayActorError(client.death_cause, actor_id.hex()))
                return refs
            client.queue.append((task, deps))
        if deps:
            core.memory_store.on_ready(deps, lambda: self._pump(client))
        self._pump(client)
        return refs

    def _pump(self, client: _Client):
        core = self.core
        batch = []
        with self.lock:
            if client.state != ALIVE or client.peer is None:
                return
            while client.queue:
                task, deps = client.queue[0]
                if deps and not all(core.memory_store.contains(d) for d in deps):
                    break
                client.queue.popleft()
                if deps:
                    core.inline_resolved_args(task.spec)
                client.inflight[task.spec[TASK_ID]] = task
                batch.append(task.spec)
            peer = client.peer
        if batch:
            try:
                peer.notify("push_tasks", batch)
            except RayConnectionError:
                pass  # the close callback re-queues or fails them

    def on_tasks_done(self, peer, done):
        actor_id = peer.context.get("actor")
        client = self.clients.get(actor_id)
        for item in done:
            task = None
            if client is not None:
                with self.lock:
                    task = client.inflight.pop(item[0], None)
            if task is not None and task.on_done is not None and task.spec[10] == KIND_ACTOR_CREATION:
                task.on_done(task, item[1], None)
                continue
            self.core.store_results(item[1])
            if task is not None:
                self.core.task_finished(task)

    # -- failures --------------------------------------------------------------------------
    def _on_actor_peer_lost(self, peer):
        actor_id = peer.context.get("actor")
        if actor_id is None:
            return
        client = self.clients.get(actor_id)
        if client is None:
            return
        with self.lock:
            if client.peer is not peer and getattr(client, "creating_peer", None) is not peer:
                return
            if getattr(client, "creating_peer", None) is peer:
                client.creating_peer = None  # handle each peer's death once
            client.peer = None
            client.state = RESTARTING
            lost = list(client.inflight.values())
            client.inflight.clear()
        owned = self.owned.get(actor_id)
        creation = [t for t in lost if t.spec[10] == KIND_ACTOR_CREATION]
        calls = [t for t in lost if t.spec[10] != KIND_ACTOR_CREATION]
        retry = []
        for task in calls:
            if task.retries_left != 0:
                task.retries_left -= 1
                retry.append(task)
            else:
                self.core.fail_task(task, RayActorError(
                    "The actor died while running this call (its process exited or was "
                    "killed).", actor_id.hex()))
        with self.lock:
            for task in reversed(retry):
                client.queue.appendleft((task, ()))
        if owned is not None:
            self._owner_handle_death(owned, bool(creation))
        else:
            entry = self._table_get(actor_id)
            if entry is not None:
                self._on_table_update(actor_id, entry)

    def _owner_handle_death(self, owned: _Owned, during_creation: bool):
        if self.core.shutting_down:
            return
        entry = self._table_get(owned.actor_id) or {}
        if owned.no_restart or entry.get("killed") or entry.get("exited"):
            self._mark_dead(owned.actor_id, "it was killed or exited on purpose "
                            "(ray.kill / exit_actor / its handle went out of scope)")
            return
        if owned.restarts_left == 0:
            self._mark_dead(owned.actor_id, "its process died and max_restarts is exhausted")
            return
        if owned.restarts_left > 0:
            owned.restarts_left -= 1
        owned.num_restarts += 1
        self._table_put(owned.actor_id, state=RESTARTING, address=None,
                        num_restarts=owned.num_restarts)
        self._lease_first(owned)

    def _mark_dead(self, actor_id: bytes, cause: str, cause_error=None, **_):
        text = f"The actor {actor_id.hex()} is dead: {cause}"
        owned = self.owned.get(actor_id)
        if owned is not None:
            owned.dead = True  # first: failing the creation task below reaches _created
        try:
            self._table_put(actor_id, state=DEAD, address=None, death_cause=text)
        except Exception:
            pass
        client = self.clients.get(actor_id)
        if client is not None:
            self._fail_all(client, text)
        if owned is not None and owned.pinned:
            pinned, owned.pinned = owned.pinned, []
            self.core.refs.remove_submitted(pinned)

    def _fail_all(self, client: _Client, cause: str):
        with self.lock:
            client.state = DEAD
            client.death_cause = cause
            pending = [t for t, _ in client.queue] + list(client.inflight.values())
            client.queue.clear()
            client.inflight.clear()
        for task in pending:
            self.core.fail_task(task, RayActorError(cause, client.actor_id.hex()))

    def _h_actor_exited(self, peer, actor_id):
        owned = self.owned.get(actor_id)
        if owned is not None:
            owned.no_restart = True
            self._table_put(actor_id, exited=True)

    def _h_kill_actor(self, peer, actor_id):
        import os

        if self.core.actor_id == actor_id:
            os._exit(1)

    # -- kill / names / handles ----------------------------------------------------------------
    def kill(self, actor_id: bytes, no_restart: bool):
        if no_restart:
            owned = self.owned.get(actor_id)
            if owned is not None:
                owned.no_restart = True
            self._table_put(actor_id, killed=True)
        client = self._client(actor_id)
        entry = self._table_get(actor_id) or {}
        address = client.address or entry.get("address")
        if address is None:
            if no_restart:
                self._mark_dead(actor_id, "it was killed with ray.kill before it started")
                owned = self.owned.get(actor_id)
                if owned is not None:  # its constructor may be running already
                    self._stop_creating_worker(owned)
            return
        try:
            peer = self.core.connect_worker(address, self._on_actor_peer_lost)
            peer.context.setdefault("actor", actor_id)
            peer.notify("kill_actor", actor_id)
        except (OSError, RayConnectionError):
            pass

    def get_named(self, name: str, namespace: str):
        actor_id = self.core.gcs.get(keys.named_actor(namespace, name))
        entry = self._table_get(actor_id) if actor_id else None
        if entry is None or entry.get("state") == DEAD:
            raise ValueError(
                f"Failed to look up actor {name!r} in namespace {namespace!r}: no live actor "
                "has that name (check the name and namespace, and that it was created)."
            )
        from ray.actor import ActorHandle

        return ActorHandle(actor_id, entry.get("class_name", "Actor"), entry.get("methods", {}))

    def handle_created(self, actor_id: bytes):
        owned = self.owned.get(actor_id)
        if owned is not None:
            owned.handles += 1

    def handle_deleted(self, actor_id: bytes):
        owned = self.owned.get(actor_id)
        if owned is None:
            return
        owned.handles -= 1
        if owned.handles > 0 or owned.opts.lifetime == "detached" or owned.opts.name:
            return
        owned.no_restart = True
        if self.core.shutting_down:
            return
        try:
            self.submit(actor_id, "__ray_terminate__", (), {}, 0)
        except Exception:
            logger.debug("could not terminate actor", exc_info=True)

    def shutdown(self):
        for owned in self.owned.values():
            owned.no_restart = True
