"""Placement groups and scheduling strategies, the pure parts: where bundles go, what a
bundle adds to its node, how a task's shape is rewritten, SPREAD turns, and the
errors bad input gets. No processes."""

import pytest

import ray
from ray._private.messages import (
    CreatePlacementGroup,
    MalformedMessage,
    PlacementGroupAccepted,
    PlacementGroupRefused,
    placement_group_reply_from_wire,
)
from ray._private.options import ActorOptions, TaskOptions
from ray._private.raylet.placement import (
    BundleLedger,
    group_of,
    place_bundles,
    rewrite_shape,
)
from ray._private.raylet.resources import NodeResources
from ray._private.raylet.scheduler import LeaseRequest, LeaseScheduler, RemoteNode, Spillback
from ray._private.runtime.placement_groups import (
    PlacementGroup,
    PlacementGroupID,
    check_bundles,
)
from ray.util.scheduling_strategies import (
    NodeAffinitySchedulingStrategy,
    PlacementGroupSchedulingStrategy,
)

PG = "ab" * 18
NODES = {"a": {"CPU": 4}, "b": {"CPU": 4}, "c": {"CPU": 2}}


def test_strict_spread_puts_every_bundle_on_its_own_node():
    plan = place_bundles([{"CPU": 1}] * 3, "STRICT_SPREAD", NODES)
    assert sorted(plan.values()) == ["a", "b", "c"]


def test_strict_spread_with_more_bundles_than_nodes_does_not_fit():
    assert place_bundles([{"CPU": 1}] * 4, "STRICT_SPREAD", NODES) is None


def test_strict_pack_needs_one_node_that_holds_the_sum():
    plan = place_bundles([{"CPU": 2}, {"CPU": 2}], "STRICT_PACK", NODES)
    assert len(set(plan.values())) == 1 and plan[0] in ("a", "b")
    assert place_bundles([{"CPU": 3}, {"CPU": 2}], "STRICT_PACK", NODES) is None


def test_pack_fills_one_node_before_using_another():
    plan = place_bundles([{"CPU": 1}] * 5, "PACK", NODES)
    counts = sorted([list(plan.values()).count(n) for n in set(plan.values())])
    assert counts == [1, 4]


def test_spread_uses_every_node_then_bends():
    plan = place_bundles([{"CPU": 1}] * 4, "SPREAD", NODES)
    assert set(plan.values()) == {"a", "b", "c"}


def test_placement_respects_custom_resources_and_fixed_bundles():
    nodes = {"a": {"CPU": 4}, "b": {"CPU": 4, "GPU": 1}}
    assert place_bundles([{"GPU": 1}], "PACK", nodes) == {0: "b"}
    # bundle 0 already lives on b: STRICT_SPREAD places bundle 1 elsewhere
    assert place_bundles([{"CPU": 1}, {"CPU": 1}], "STRICT_SPREAD", nodes, {0: "b"}) == {1: "a"}
    assert place_bundles([{"CPU": 1}, {"CPU": 1}], "STRICT_PACK", nodes, {0: "b"}) == {1: "b"}


def test_strict_pack_tries_the_soft_target_first():
    bundles = [{"CPU": 1}]
    assert place_bundles(bundles, "STRICT_PACK", NODES) == {0: "a"}
    assert place_bundles(bundles, "STRICT_PACK", NODES, prefer="c") == {0: "c"}
    assert place_bundles([{"CPU": 3}], "STRICT_PACK", NODES, prefer="c") == {0: "a"}


def test_unknown_strategy_is_refused():
    with pytest.raises(ValueError, match="STRICT_SPREAD"):
        place_bundles([{"CPU": 1}], "SPREAD_OUT", NODES)


def test_rewrite_shape_names_the_bundle_and_the_wildcard():
    assert rewrite_shape({"CPU": 1}, PG, 0) == {f"CPU_group_{PG}": 1, f"CPU_group_0_{PG}": 1}
    assert rewrite_shape({"CPU": 1}, PG, -1) == {f"CPU_group_{PG}": 1}
    assert rewrite_shape({}, PG, 2) == {f"bundle_group_2_{PG}": 0.001}
    assert group_of(f"CPU_group_0_{PG}") == PG and group_of(f"GPU_group_{PG}") == PG
    assert group_of("my_group_thing") is None and group_of("CPU") is None


def test_ledger_prepare_commit_release_round_trip():
    res = NodeResources({"CPU": 4, "GPU": 2})
    ledger = BundleLedger(res)
    assert ledger.prepare(PG, [(0, {"CPU": 1, "GPU": 1}), (1, {"CPU": 2})])
    assert res.available_dict()["CPU"] == 1
    assert f"CPU_group_{PG}" not in res.total  # not usable before commit
    ledger.commit(PG)
    avail = res.available_dict()
    assert avail[f"CPU_group_{PG}"] == 3 and avail[f"CPU_group_1_{PG}"] == 2
    assert avail[f"GPU_group_0_{PG}"] == 1 and avail[f"bundle_group_{PG}"] == 2000
    alloc = res.allocate(rewrite_shape({"GPU": 1}, PG, 0))
    assert alloc is not None and ledger.gpu_ids(alloc) == [(0, 1)]
    res.release(alloc)
    assert sorted(ledger.release(PG)) == [0, 1]
    assert res.available_dict() == {"CPU": 4, "GPU": 2} and res.total_dict() == {"CPU": 4, "GPU": 2}


def test_ledger_prepare_is_all_or_nothing():
    res = NodeResources({"CPU": 2})
    ledger = BundleLedger(res)
    assert not ledger.prepare(PG, [(0, {"CPU": 1}), (1, {"CPU": 2})])
    assert res.available_dict() == {"CPU": 2} and not ledger.groups


def test_spread_takes_turns_over_nodes_with_room():
    sched = LeaseScheduler(NodeResources({"CPU": 4}))
    sched.update_remote({"n2": RemoteNode({"CPU": 4}, {"CPU": 4})})
    decisions = [sched.submit(LeaseRequest(i, {"CPU": 1}, strategy="SPREAD"))[0]
                 for i in range(4)]
    spilled = sum(isinstance(d, Spillback) for d in decisions)
    assert spilled == 2  # two here, two on n2 (the default would keep all four here)
    default = [sched.submit(LeaseRequest(10 + i, {"CPU": 1}))[0] for i in range(2)]
    assert not any(isinstance(d, Spillback) for d in default)


def test_group_requests_are_not_autoscaler_demand():
    sched = LeaseScheduler(NodeResources({"CPU": 1}))
    sched.submit(LeaseRequest(1, rewrite_shape({"CPU": 1}, PG, 0)))
    sched.submit(LeaseRequest(2, {"GPU": 1}))
    assert sched.pending_demand() == [{"GPU": 1}]


def _pg(bundles):
    return PlacementGroup(PlacementGroupID(bytes.fromhex(PG)), bundles)


def test_task_options_rewrite_into_the_group_and_old_spelling_works():
    pg = _pg([{"CPU": 1}, {"CPU": 2}])
    new = TaskOptions.from_kwargs(
        {"scheduling_strategy": PlacementGroupSchedulingStrategy(pg, 1)})
    old = TaskOptions.from_kwargs({"placement_group": pg, "placement_group_bundle_index": 1})
    assert new.resource_shape() == old.resource_shape() == {
        f"CPU_group_{PG}": 1, f"CPU_group_1_{PG}": 1}
    empty = TaskOptions.from_kwargs({"placement_group": PlacementGroup.empty()})
    assert empty.resource_shape() == {"CPU": 1} and empty.strategy() is None
    actor = ActorOptions.from_kwargs({"placement_group": pg})
    assert actor.resource_shape() == {f"bundle_group_{PG}": 0.001}
    assert actor.placement_shape() == {}


def test_bad_strategies_get_clear_errors():
    pg = _pg([{"CPU": 1}])
    with pytest.raises(ValueError, match="out of range.*has 1 bundle"):
        PlacementGroupSchedulingStrategy(pg, 3)
    with pytest.raises(ValueError, match="cannot hold it.*bigger bundles"):
        TaskOptions.from_kwargs({"num_cpus": 2,
                                 "scheduling_strategy": PlacementGroupSchedulingStrategy(pg)})
    with pytest.raises(ValueError, match="Unknown scheduling_strategy 'PACKED'"):
        TaskOptions.from_kwargs({"scheduling_strategy": "PACKED"})
    with pytest.raises(ValueError, match="needs placement_group="):
        TaskOptions.from_kwargs({"placement_group_bundle_index": 0})
    with pytest.raises(TypeError, match="needs a PlacementGroup"):
        PlacementGroupSchedulingStrategy("pg")
    with pytest.raises(TypeError, match="hex string"):
        NodeAffinitySchedulingStrategy(None, soft=False)
    spread = TaskOptions.from_kwargs({"scheduling_strategy": "SPREAD"})
    assert spread.shape_key() != TaskOptions.from_kwargs({}).shape_key()


def test_bad_bundles_get_clear_errors():
    with pytest.raises(ValueError, match="non-empty list of bundles"):
        check_bundles([])
    with pytest.raises(ValueError, match="reserves no resources"):
        check_bundles([{"CPU": 1}, {"CPU": 0}])
    with pytest.raises(ValueError, match="must be a number"):
        check_bundles([{"CPU": -1}])
    assert check_bundles([{"CPU": 1, "GPU": 0}]) == [{"CPU": 1}]


def test_placement_groups_need_a_cluster_in_local_mode():
    from ray.util.placement_group import placement_group

    ray.init(local_mode=True)
    try:
        with pytest.raises(ray.exceptions.RayError, match="local_mode"):
            placement_group([{"CPU": 1}])
    finally:
        ray.shutdown()


def test_ray_util_works_after_plain_import_ray():
    assert callable(ray.util.placement_group) and callable(ray.util.remove_placement_group)
    assert callable(ray.util.get_current_placement_group)


def test_placement_group_requests_and_replies_round_trip_through_msgpack():
    import msgpack

    def through_the_wire(message):
        return msgpack.unpackb(msgpack.packb(message.to_wire()))

    request = CreatePlacementGroup(
        placement_group_id=PG, bundles=[{"CPU": 1}, {"GPU": 0.5}], strategy="STRICT_PACK",
        name="trainers", namespace="ns", job_id="01000000", detached=True, pid=4242,
        soft_target="node-a")
    assert CreatePlacementGroup.from_wire(through_the_wire(request)) == request
    assert placement_group_reply_from_wire(through_the_wire(PlacementGroupAccepted())) == (
        PlacementGroupAccepted())
    refused = PlacementGroupRefused(PlacementGroupRefused.NAME_TAKEN, "pick another name")
    assert placement_group_reply_from_wire(through_the_wire(refused)) == refused


@pytest.mark.parametrize("wire", [
    {"error": "old dict reply"}, [], [0, "extra"], [1, "name_taken"], [1, 2, 3], [7]])
def test_malformed_placement_group_replies_are_refused(wire):
    with pytest.raises(MalformedMessage, match="PlacementGroupReply"):
        placement_group_reply_from_wire(wire)


def test_malformed_create_placement_group_requests_are_refused():
    good = CreatePlacementGroup(PG, [{"CPU": 1}], "PACK", "", "default", "", False, 1).to_wire()
    for index, bad in [(1, {"CPU": 1}), (1, ["CPU"]), (2, None), (8, 5)]:
        wire = list(good)
        wire[index] = bad
        with pytest.raises(MalformedMessage, match="CreatePlacementGroup"):
            CreatePlacementGroup.from_wire(wire)
    with pytest.raises(MalformedMessage, match="CreatePlacementGroup"):
        CreatePlacementGroup.from_wire({"placement_group_id": PG})
