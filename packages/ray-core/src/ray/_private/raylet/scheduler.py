"""Where a worker lease goes: granted here, spilled to another node, or queued.

A pure state machine: requests and resource events in, decisions out. The
raylet turns ``Grant`` into a worker, ``Spillback`` into a reply naming another
raylet, and reports ``Infeasible`` to the owner as a warning (the request stays
queued: a node that fits may still join, e.g. through the autoscaler).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Hashable

from ray._private.raylet.placement import group_of
from ray._private.raylet.resources import Allocation, NodeResources, to_units


@dataclasses.dataclass
class LeaseRequest:
    request_id: Hashable
    shape: dict[str, float]
    job_id: bytes = b""
    is_actor: bool = False
    detached: bool = False  # a detached actor outlives the driver that created it
    # A request that already bounced once is granted or queued here, never re-spilled,
    # so two nodes with stale views of each other cannot ping-pong it forever.
    spilled: bool = False
    # "SPREAD": take turns over the nodes that can run it now instead of filling this one.
    strategy: str | None = None
    # Whether the owner would run it again if the memory monitor killed it (None: unsaid).
    retriable: bool | None = None
    # Spilled here because this node looked free: if it is not now, reject it (the owner
    # asks its own raylet again) rather than queue it behind a lease that may be held
    # until the owner runs out of work (a stale view must not park requests).
    grant_or_reject: bool = False


@dataclasses.dataclass
class Grant:
    request: LeaseRequest
    allocation: Allocation


@dataclasses.dataclass
class Spillback:
    request: LeaseRequest
    node_id: str
    # Chosen because our view shows it free now (not only able to fit it ever): the
    # request goes there as grant_or_reject.
    grant_or_reject: bool = False
    # How many other nodes our view shows with room for this shape now, besides the
    # target: the owner may keep that many more requests in flight (a large cluster
    # fills in one round of requests, not in rounds of the default few).
    room: int = 0


@dataclasses.dataclass
class Rejected:
    """A grant_or_reject request that this node cannot grant now."""

    request: LeaseRequest


@dataclasses.dataclass
class Infeasible:
    request: LeaseRequest
    cluster_total: dict[str, float]


Decision = Grant | Spillback | Rejected | Infeasible


@dataclasses.dataclass
class RemoteNode:
    total: dict[str, float]
    available: dict[str, float]


class LeaseScheduler:
    def __init__(self, resources: NodeResources, rng: random.Random | None = None):
        self.resources = resources
        # Breaks ties between equally free nodes: in dict order, every burst (and every
        # raylet) would try the same first nodes and the last ones would see no work.
        self._rng = rng or random.Random()
        self.queue: list[LeaseRequest] = []
        self.remote: dict[str, RemoteNode] = {}
        self._warned: set = set()
        self._spread_turn = 0

    # -- events ------------------------------------------------------------
    def submit(self, req: LeaseRequest) -> list[Decision]:
        if req.strategy == "SPREAD" and not req.spilled:
            target = self._spread_target(req.shape)
            if target is not None:
                self._reserve_remote(target, req.shape)
                return [Spillback(req, target, grant_or_reject=True)]
        alloc = self.resources.allocate(req.shape) if not self.queue_blocks(req) else None
        if alloc is not None:
            return [Grant(req, alloc)]
        if req.grant_or_reject:
            return [Rejected(req)]
        if not req.spilled:
            target, room = self._nodes_with_room(req.shape)
            if target is not None:
                self._reserve_remote(target, req.shape)
                return [Spillback(req, target, grant_or_reject=True, room=room)]
        if self.resources.feasible(req.shape):
            self.queue.append(req)
            return []
        target = None if req.spilled else self._node_feasible(req.shape)
        if target is not None:
            return [Spillback(req, target)]
        self.queue.append(req)
        return [Infeasible(req, self.cluster_total())]

    def queue_blocks(self, req: LeaseRequest) -> bool:
        """FIFO fairness: a new request may not jump queued requests of the same shape."""
        return any(q.shape == req.shape for q in self.queue)

    def cancel(self, request_id) -> bool:
        for i, q in enumerate(self.queue):
            if q.request_id == request_id:
                del self.queue[i]
                return True
        return False

    def release(self, alloc: Allocation) -> list[Decision]:
        self.resources.release(alloc)
        return self.dispatch()

    def update_remote(self, nodes: dict[str, RemoteNode]) -> list[Decision]:
        self.remote = nodes
        return self.dispatch()

    def dispatch(self) -> list[Decision]:
        """Grant queued requests that now fit; spill ones another node can take now."""
        decisions: list[Decision] = []
        remaining = []
        for req in self.queue:
            alloc = self.resources.allocate(req.shape)
            if alloc is not None:
                decisions.append(Grant(req, alloc))
                continue
            if not req.spilled:
                target, room = self._nodes_with_room(req.shape)
                now = target is not None
                if target is None and not self.resources.feasible(req.shape):
                    target = self._node_feasible(req.shape)
                if target is not None:
                    decisions.append(Spillback(req, target, grant_or_reject=now, room=room))
                    self._reserve_remote(target, req.shape)
                    continue
            remaining.append(req)
        self.queue = remaining
        return decisions

    def _reserve_remote(self, node_id: str, shape) -> None:
        """Count a spilled request against our view of that node until its next
        heartbeat, so a burst of requests spreads over nodes instead of flooding one."""
        node = self.remote[node_id]
        for k, v in shape.items():
            node.available[k] = node.available.get(k, 0) - v

    # -- queries -------------------------------------------------------------
    def _spread_target(self, shape) -> str | None:
        """Round robin over the nodes (this one included, as "") with room for ``shape``
        now; None means this node's turn, or that no node has room."""
        nodes = [node_id for node_id, node in self.remote.items()
                 if all(node.available.get(k, 0) >= v - 1e-9 for k, v in shape.items())]
        if self.resources.can_allocate(shape):
            nodes.append("")
        if not nodes:
            return None
        nodes.sort()
        self._spread_turn += 1
        return nodes[self._spread_turn % len(nodes)] or None

    def _nodes_with_room(self, shape) -> tuple[str | None, int]:
        """``(target, room)``: the node with the most CPUs free among those with room for
        ``shape`` now (a random one of them on a tie), and how many more requests of
        ``shape`` the nodes' free resources fit besides this one."""
        best: list[str] = []
        best_score = None
        slots = 0
        sized = [(k, v) for k, v in shape.items() if v > 0]
        for node_id, node in self.remote.items():
            if all(node.available.get(k, 0) >= v - 1e-9 for k, v in shape.items()):
                slots += min((int((node.available.get(k, 0) + 1e-9) // v) for k, v in sized),
                             default=1)
                score = node.available.get("CPU", 0)
                if best_score is None or score > best_score:
                    best, best_score = [node_id], score
                elif score == best_score:
                    best.append(node_id)
        if not best:
            return None, 0
        return (best[0] if len(best) == 1 else self._rng.choice(best)), slots - 1

    def _node_feasible(self, shape) -> str | None:
        for node_id, node in self.remote.items():
            if all(node.total.get(k, 0) >= v - 1e-9 for k, v in shape.items()):
                return node_id
        return None

    def cluster_total(self) -> dict[str, float]:
        total = self.resources.total_dict()
        for node in self.remote.values():
            for k, v in node.total.items():
                total[k] = total.get(k, 0) + v
        return total

    def pending_demand(self) -> list[dict[str, float]]:
        """Queued shapes, for the autoscaler. Requests for a placement group's resources
        are left out: they wait for bundles, which the group reports as its demand."""
        return [dict(q.shape) for q in self.queue
                if not any(group_of(name) for name in q.shape)]


def fits_units(shape: dict[str, float], available: dict[str, int]) -> bool:
    return all(available.get(k, 0) >= to_units(v) for k, v in shape.items())
