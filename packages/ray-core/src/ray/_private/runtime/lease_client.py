"""Worker leases for tasks and actors alike: request, follow, retry, fail.

One request goes to the raylet its strategy names (ours by default; a node-affinity
target directly), follows ``LeaseSpillback`` replies to other raylets, goes back to
the local raylet when a remote one vanishes (its node died) or, asked because it looked
free, turns out busy (``LeaseRejected``), and ends in exactly one
call on its ``LeaseHandler``: ``lease_granted`` with a connected worker, or
``lease_failed`` with the error its owner should raise (or None while shutting down).
An infeasible request is simply not answered until a node that fits joins.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from ray._private.gcs import keys
from ray._private.messages import (
    LeaseFailed,
    LeaseGranted,
    LeaseRejected,
    LeaseRequest,
    LeaseSpillback,
    MalformedMessage,
    OwnerAddress,
    RayletAddress,
    WorkerKilled,
    lease_reply_from_wire,
)
from ray._private.rpc import Future, RemoteError, RpcPeer
from ray._private.runtime.context import JobState
from ray._private.runtime.peers import PeerCallback, PeerPool
from ray._private.strategies import NodeAffinitySchedulingStrategy
from ray._private.transport import EventLoop
from ray.exceptions import (
    ActorPlacementGroupRemoved,
    RayConnectionError,
    RuntimeEnvSetupError,
    TaskPlacementGroupRemoved,
    TaskUnschedulableError,
)

logger = logging.getLogger(__name__)

_RETRY_DELAY_S = 0.1


class Lease:
    """A worker leased from ``raylet`` and connected (``worker``)."""

    __slots__ = ("worker_id", "worker", "raylet", "resource_ids", "node_id", "address")

    def __init__(self, grant: LeaseGranted, worker: RpcPeer, raylet: RpcPeer):
        self.worker_id = grant.worker_id
        self.worker = worker
        self.raylet = raylet
        self.resource_ids = grant.resource_ids
        self.node_id = grant.node_id
        self.address = grant.address

    def give_back(self, kill: bool = False) -> None:
        """Return the worker to its raylet (``kill``: the raylet stops its process)."""
        try:
            self.raylet.notify("return_lease", self.worker_id, kill)
        except RayConnectionError:
            pass  # that raylet is gone, and its workers with it

    def ask_death_cause(self, then: Callable[[WorkerKilled | None], None]) -> None:
        """Ask the raylet why this lease's worker died; ``then(cause)`` gets the answer
        (None: not killed on purpose, or the raylet is gone). The raylet records a cause
        (the memory monitor's kill) before it kills, so it is there by the time the
        worker's connection drops."""
        try:
            future = self.raylet.call("get_worker_death_cause", self.worker_id)
        except RayConnectionError:  # the raylet (and its node) is gone
            then(None)
            return

        def answered(f) -> None:
            try:
                wire = f.result()
            except Exception:  # noqa: BLE001 - no cause to be had: a plain crash
                wire = None
            then(None if wire is None else WorkerKilled.from_wire(wire))

        future.add_done_callback(answered)


class LeaseHandler(Protocol):
    def lease_granted(self, lease: Lease) -> None: ...

    def lease_spilled(self, room: int) -> None:
        """A raylet sent the request on, seeing free resources for ``room`` more."""

    def lease_wanted(self) -> bool:
        """Whether a request sent on (spilled or rejected) should still travel: False
        ends it (``lease_failed(None)``) instead of leasing a worker nobody will use."""

    def lease_failed(self, error: Exception | None) -> None:
        """The request ended without a worker; None: without an error (this process is
        shutting down, or ``lease_wanted`` said no)."""


class LeaseClient:
    def __init__(self, *, peers: PeerPool, gcs, loop: EventLoop, job: JobState,
                 owner: OwnerAddress, is_shutting_down: Callable[[], bool]):
        self._peers = peers
        self._gcs = gcs
        self._loop = loop
        self._job = job  # a worker's job changes when it binds to its first task's
        self._owner = owner
        self._is_shutting_down = is_shutting_down

    def request(self, shape: dict, handler: LeaseHandler, on_worker_lost: PeerCallback, *,
                is_actor: bool = False, detached: bool = False, spread: bool = False,
                affinity: NodeAffinitySchedulingStrategy | None = None,
                runtime_env: list | None = None, retriable: bool | None = None) -> None:
        """Ask for one worker of ``shape``; the outcome goes to ``handler``. ``retriable``:
        whether the work would run again if the memory monitor killed it."""
        request = LeaseRequest(shape, self._job.binary, is_actor=is_actor, owner=self._owner,
                               detached=detached, strategy="SPREAD" if spread else None,
                               runtime_env=runtime_env, retriable=retriable)
        _Attempt(self, request, affinity, handler, on_worker_lost).start()

    # -- used by attempts ------------------------------------------------------------
    def _first_raylet(self, affinity: NodeAffinitySchedulingStrategy | None
                      ) -> tuple[RpcPeer, bool]:
        """(raylet, spilled) to ask first. A node-affinity request goes straight to that
        node's raylet (as a spilled request when hard, so it is never sent on). A dead or
        unknown node fails a hard affinity; a soft one falls back to the local raylet."""
        if affinity is None:
            return self._peers.local_raylet(), False
        info = self._gcs.hget_obj(keys.NODES, affinity.node_id)
        if info is not None and info.get("alive", True):
            try:
                peer = self._peers.raylet_for(RayletAddress.from_node_info(affinity.node_id, info))
                return peer, not affinity.soft
            except (OSError, RayConnectionError) as exc:
                logger.info("affinity target %s unreachable: %s", affinity.node_id[:8], exc)
        if affinity.soft:
            return self._peers.local_raylet(), False
        state = "unknown" if info is None else "dead"
        raise TaskUnschedulableError(
            f"NodeAffinitySchedulingStrategy(soft=False) names node {affinity.node_id}, which "
            f"is {state}. Pick a live node (ray.nodes()) or pass soft=True to run elsewhere "
            "when it is gone.")


class _Attempt:
    """One lease request on its way through raylets."""

    __slots__ = ("client", "request", "affinity", "handler", "on_worker_lost")

    def __init__(self, client: LeaseClient, request: LeaseRequest,
                 affinity: NodeAffinitySchedulingStrategy | None, handler: LeaseHandler,
                 on_worker_lost: PeerCallback):
        self.client = client
        self.request = request
        self.affinity = affinity
        self.handler = handler
        self.on_worker_lost = on_worker_lost

    def start(self) -> None:
        try:
            raylet, spilled = self.client._first_raylet(self.affinity)
        except TaskUnschedulableError as exc:
            self.handler.lease_failed(exc)
            return
        self._send(raylet, spilled)

    def _send(self, raylet: RpcPeer, spilled: bool, grant_or_reject: bool = False) -> None:
        self.request.spilled = spilled
        self.request.grant_or_reject = grant_or_reject
        fut = raylet.call("request_lease", *self.request.to_wire())
        self.client._loop.when_done(fut, lambda f: self._on_reply(raylet, f))

    def _retry_soon(self) -> None:
        self.client._loop.call_later(_RETRY_DELAY_S, self.start)

    def _on_reply(self, raylet: RpcPeer, fut: Future) -> None:
        client = self.client
        local = raylet is client._peers.raylet
        try:
            reply = lease_reply_from_wire(fut.result())
        except (RemoteError, RayConnectionError, MalformedMessage) as exc:
            if not local and not client._is_shutting_down():
                # A remote raylet went away (its node died): ask again from the start
                # (our raylet, or a failure if the work must run on that node).
                self._retry_soon()
                return
            if client._is_shutting_down():
                self.handler.lease_failed(None)
                return
            logger.warning("worker lease request for %s failed: %s", self.request.shape, exc)
            self.handler.lease_failed(exc)
            return
        if type(reply) in (LeaseSpillback, LeaseRejected) and not self.handler.lease_wanted():
            # The work ran out while this request travelled: stop here rather than take
            # a worker (and bounce between busy nodes) only to give it back.
            self.handler.lease_failed(None)
            return
        if type(reply) is LeaseSpillback:
            try:
                other = client._peers.raylet_for(reply.raylet)
            except (OSError, RayConnectionError) as exc:
                # Spilled to a node that just died (this runs on the I/O thread: raising
                # would close the connection the reply came on). Start again afresh: not
                # as a spilled request, which would stay queued even after a node that
                # fits joins.
                logger.warning("cannot reach %s for a spillback: %s", reply.raylet, exc)
                self._retry_soon()
                return
            self._send(other, spilled=True, grant_or_reject=reply.grant_or_reject)
            self.handler.lease_spilled(reply.room)
        elif type(reply) is LeaseRejected:
            # Spilled there on a view older than its last grant: our raylet (which counted
            # that node as taken) places it again, or queues it.
            self.start()
        elif isinstance(reply, LeaseFailed):
            self.handler.lease_failed(self._error(reply))
        elif isinstance(reply, LeaseGranted):
            self._connect(reply, raylet)

    def _error(self, reply: LeaseFailed) -> Exception:
        if reply.reason == LeaseFailed.PLACEMENT_GROUP_REMOVED:
            cls = ActorPlacementGroupRemoved if self.request.is_actor \
                else TaskPlacementGroupRemoved
            return cls(reply.message)
        if reply.reason == LeaseFailed.RUNTIME_ENV_SETUP:
            return RuntimeEnvSetupError(reply.message)
        return RayConnectionError(f"the raylet refused a lease ({reply.reason}): {reply.message}")

    def _connect(self, grant: LeaseGranted, raylet: RpcPeer) -> None:
        try:
            worker = self.client._peers.connect_worker(grant.address, self.on_worker_lost)
        except (OSError, RayConnectionError) as exc:
            # The leased worker died before we reached it: hand it back (the raylet
            # stops what is left of it) and ask again.
            logger.info("cannot reach the worker leased at %s: %s", grant.address, exc)
            try:
                raylet.notify("return_lease", grant.worker_id, True)
            except RayConnectionError:
                pass  # the raylet is gone too; the next attempt finds out
            self._retry_soon()
            return
        self.handler.lease_granted(Lease(grant, worker, raylet))


__all__ = ["Lease", "LeaseClient", "LeaseHandler"]
