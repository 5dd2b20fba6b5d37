"""The raylet's ``LeaseScheduler`` without processes: where a burst of requests goes
over many one-CPU nodes, and ``grant_or_reject`` (a request spilled to a node that only
looked free is rejected there, not parked behind another lease)."""

import random

from ray._private.messages import (
    LeaseRejected,
    LeaseSpillback,
    RayletAddress,
    lease_reply_from_wire,
)
from ray._private.messages import (
    LeaseRequest as WireLeaseRequest,
)
from ray._private.raylet.resources import NodeResources
from ray._private.raylet.scheduler import (
    Grant,
    LeaseRequest,
    LeaseScheduler,
    Rejected,
    RemoteNode,
    Spillback,
)


def _cluster(nodes: int) -> dict[str, RemoteNode]:
    return {f"node-{i:03d}": RemoteNode({"CPU": 1.0}, {"CPU": 1.0}) for i in range(nodes)}


def _request(i: int, **kwargs) -> LeaseRequest:
    return LeaseRequest(i, {"CPU": 1.0}, **kwargs)


def test_a_burst_spreads_over_every_free_node_once_then_queues_here():
    sched = LeaseScheduler(NodeResources({"CPU": 1}))
    sched.update_remote(_cluster(99))
    decisions = [d for i in range(120) for d in sched.submit(_request(i))]
    grants = [d for d in decisions if isinstance(d, Grant)]
    spills = [d for d in decisions if isinstance(d, Spillback)]
    assert len(grants) == 1 and len(spills) == 99
    assert len({d.node_id for d in spills}) == 99  # each node once
    assert all(d.grant_or_reject for d in spills)  # they looked free
    assert len(sched.queue) == 20


def test_a_spill_to_a_node_that_can_only_ever_fit_it_may_queue_there():
    sched = LeaseScheduler(NodeResources({"CPU": 1}))
    sched.update_remote({"big": RemoteNode({"CPU": 8.0}, {"CPU": 0.0})})
    [spill] = sched.submit(LeaseRequest(1, {"CPU": 4.0}))
    assert isinstance(spill, Spillback) and spill.node_id == "big"
    assert not spill.grant_or_reject


def test_a_grant_or_reject_request_on_a_busy_node_is_rejected_not_queued():
    sched = LeaseScheduler(NodeResources({"CPU": 1}))
    [grant] = sched.submit(_request(1))
    assert isinstance(grant, Grant)
    sched.update_remote(_cluster(3))  # others look free: it still must not spill on
    [rejected] = sched.submit(_request(2, spilled=True, grant_or_reject=True))
    assert isinstance(rejected, Rejected) and sched.queue == []
    sched.release(grant.allocation)
    [granted] = sched.submit(_request(3, spilled=True, grant_or_reject=True))
    assert isinstance(granted, Grant)


def test_a_plain_spilled_request_still_queues_on_a_busy_node():
    sched = LeaseScheduler(NodeResources({"CPU": 1}))
    sched.submit(_request(1))
    assert sched.submit(_request(2, spilled=True)) == [] and len(sched.queue) == 1


def test_queued_requests_dispatched_to_free_nodes_go_as_grant_or_reject():
    sched = LeaseScheduler(NodeResources({"CPU": 1}))
    sched.submit(_request(1))
    sched.submit(_request(2))
    [spill] = sched.update_remote(_cluster(1))
    assert isinstance(spill, Spillback) and spill.grant_or_reject


def test_grant_or_reject_travels_on_the_wire_and_old_requests_still_parse():
    request = WireLeaseRequest({"CPU": 1.0}, b"job", spilled=True, grant_or_reject=True)
    assert WireLeaseRequest.from_wire(request.to_wire()).grant_or_reject is True
    assert WireLeaseRequest.from_wire(request.to_wire()[:9]).grant_or_reject is False
    spill = lease_reply_from_wire(
        LeaseSpillback(RayletAddress("ab", "127.0.0.1", 1), True).to_wire())
    assert isinstance(spill, LeaseSpillback) and spill.grant_or_reject
    old = lease_reply_from_wire([LeaseSpillback.KIND, ["ab", "127.0.0.1", 1]])
    assert isinstance(old, LeaseSpillback) and not old.grant_or_reject
    assert isinstance(lease_reply_from_wire(LeaseRejected().to_wire()), LeaseRejected)


def test_ties_between_equally_free_nodes_are_broken_at_random_not_in_table_order():
    firsts = set()
    for seed in range(20):
        sched = LeaseScheduler(NodeResources({"CPU": 0}), rng=random.Random(seed))
        sched.update_remote(_cluster(50))
        [spill] = sched.submit(_request(1))
        firsts.add(spill.node_id)
    assert len(firsts) > 5  # not always node-000


def test_the_node_with_most_cpus_free_still_wins_over_a_tie_break():
    sched = LeaseScheduler(NodeResources({"CPU": 0}), rng=random.Random(0))
    sched.update_remote({**_cluster(10), "big": RemoteNode({"CPU": 4.0}, {"CPU": 4.0})})
    [spill] = sched.submit(_request(1))
    assert spill.node_id == "big"


# -- how many more requests the owner may send: the spillback's room ---------------------


def test_a_spillback_says_how_much_room_the_view_shows_besides_its_target():
    sched = LeaseScheduler(NodeResources({"CPU": 1}))
    nodes = _cluster(5)
    nodes["wide"] = RemoteNode({"CPU": 4.0}, {"CPU": 4.0})
    sched.update_remote(nodes)
    assert isinstance(sched.submit(_request(0))[0], Grant)  # this node first
    rooms = [d.room for i in range(1, 10) for d in sched.submit(_request(i))]
    assert rooms == [8, 7, 6, 5, 4, 3, 2, 1, 0]  # 5 one-CPU nodes + 4 CPUs on "wide"
    assert sched.submit(_request(10)) == [] and len(sched.queue) == 1


def test_queued_requests_spilled_on_a_fresh_view_carry_its_room():
    sched = LeaseScheduler(NodeResources({"CPU": 1}))
    assert isinstance(sched.submit(_request(0))[0], Grant)
    assert sched.submit(_request(1)) == []  # no other node known yet: it queues
    [spill] = sched.update_remote(_cluster(3))
    assert isinstance(spill, Spillback) and spill.room == 2


def test_the_room_travels_on_the_wire_and_old_replies_still_parse():
    address = RayletAddress("ab", "127.0.0.1", 1234)
    wire = LeaseSpillback(address, True, 41).to_wire()
    reply = lease_reply_from_wire(wire)
    assert isinstance(reply, LeaseSpillback) and reply.room == 41 and reply.grant_or_reject
    assert lease_reply_from_wire(wire[:3]).room == 0
