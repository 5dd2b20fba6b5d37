"""The pure planner: golden bin-packing cases, exhaustive small grids, properties."""

from __future__ import annotations

import dataclasses
import itertools
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ray.autoscaler.planner import (
    ClusterSnapshot,
    NodeType,
    NodeView,
    ScalingPolicy,
    plan,
)

GOLDEN_TYPES = {
    "cpu2": NodeType("cpu2", {"CPU": 2}),
    "cpu8": NodeType("cpu8", {"CPU": 8}),
    "gpu1": NodeType("gpu1", {"CPU": 4, "GPU": 1}),
}
WIDE = ScalingPolicy(min_workers=0, max_workers=100, idle_timeout_s=60)
HEAD = NodeView("head", "head", is_head=True, total={"CPU": 0}, available={"CPU": 0})


def cpus(n, each=1):
    return tuple({"CPU": each} for _ in range(n))


def snapshot(*nodes, demand=(), now_s=0.0):
    return ClusterSnapshot(nodes=(HEAD, *nodes), demand=tuple(demand), now_s=now_s)


@pytest.mark.parametrize(
    "demand, expected",
    [
        (cpus(4), {"cpu2": 2}),
        (cpus(9), {"cpu8": 1, "cpu2": 1}),
        (cpus(1, each=3), {"cpu8": 1}),
        (cpus(3) + ({"GPU": 1},), {"gpu1": 1}),
    ],
    ids=["4xCPU1", "9xCPU1", "1xCPU3", "3xCPU1+GPU1"],
)
def test_golden_bin_packing_cases_from_anchors(demand, expected):
    result = plan(snapshot(demand=demand), GOLDEN_TYPES, WIDE)
    assert result.launch == expected
    assert result.infeasible == ()
    assert result.terminate == ()


def test_infeasible_demand_warns_and_launches_nothing():
    result = plan(snapshot(demand=[{"CPU": 16}]), GOLDEN_TYPES, WIDE)
    assert result.launch == {}
    assert result.infeasible == ({"CPU": 16},)
    assert any("fit no node type" in r for r in result.reasons)


def test_infeasible_demand_does_not_block_feasible_demand():
    result = plan(snapshot(demand=[{"CPU": 16}, {"CPU": 1}]), GOLDEN_TYPES, WIDE)
    assert result.launch == {"cpu2": 1}
    assert result.infeasible == ({"CPU": 16},)


def test_demand_that_fits_free_capacity_launches_nothing():
    live = NodeView("w1", "cpu8", total={"CPU": 8}, available={"CPU": 6})
    result = plan(snapshot(live, demand=cpus(6)), GOLDEN_TYPES, WIDE)
    assert result.launch == {}


def test_pending_nodes_count_as_capacity_so_replanning_does_not_relaunch():
    first = plan(snapshot(demand=cpus(4)), GOLDEN_TYPES, WIDE)
    pending = [
        NodeView(f"p{i}", name, pending=True)
        for i, name in enumerate(Counter(first.launch).elements())
    ]
    second = plan(snapshot(*pending, demand=cpus(4)), GOLDEN_TYPES, WIDE)
    assert second.launch == {}
    assert second.terminate == ()


def test_max_workers_caps_launches_and_reports_waiting_demand():
    policy = ScalingPolicy(max_workers=1, idle_timeout_s=60)
    result = plan(snapshot(demand=cpus(4)), GOLDEN_TYPES, policy)
    assert result.num_launches == 1
    assert len(result.waiting) == 2


def test_per_type_max_workers_moves_demand_to_another_type():
    types = {**GOLDEN_TYPES, "cpu2": NodeType("cpu2", {"CPU": 2}, max_workers=0)}
    result = plan(snapshot(demand=cpus(4)), types, WIDE)
    assert result.launch == {"cpu8": 1}


def test_min_workers_are_launched_without_demand():
    policy = ScalingPolicy(min_workers=3, max_workers=5)
    result = plan(snapshot(), GOLDEN_TYPES, policy)
    assert result.launch == {"cpu2": 3}


def test_per_type_min_workers_are_launched():
    types = {**GOLDEN_TYPES, "gpu1": NodeType("gpu1", {"CPU": 4, "GPU": 1}, min_workers=1)}
    result = plan(snapshot(), types, WIDE)
    assert result.launch == {"gpu1": 1}


def test_idle_worker_is_terminated_only_after_the_timeout():
    idle = NodeView("w1", "cpu2", total={"CPU": 2}, available={"CPU": 2}, idle_since_s=100.0)
    early = plan(snapshot(idle, now_s=159.0), GOLDEN_TYPES, WIDE)
    late = plan(snapshot(idle, now_s=160.0), GOLDEN_TYPES, WIDE)
    assert early.terminate == ()
    assert late.terminate == ("w1",)


def test_idle_worker_is_kept_when_demand_is_packed_onto_it():
    idle = NodeView("w1", "cpu2", total={"CPU": 2}, available={"CPU": 2}, idle_since_s=0.0)
    result = plan(snapshot(idle, demand=cpus(1), now_s=1000.0), GOLDEN_TYPES, WIDE)
    assert result.terminate == ()
    assert result.launch == {}


def test_idle_workers_are_not_terminated_below_min_workers():
    idle = [
        NodeView(f"w{i}", "cpu2", total={"CPU": 2}, available={"CPU": 2}, idle_since_s=0.0)
        for i in range(3)
    ]
    policy = ScalingPolicy(min_workers=2, max_workers=5, idle_timeout_s=10)
    result = plan(snapshot(*idle, now_s=100.0), GOLDEN_TYPES, policy)
    assert result.terminate == ("w0",)


def test_head_and_busy_nodes_are_never_terminated():
    busy = NodeView("w1", "cpu2", total={"CPU": 2}, available={"CPU": 0}, idle_since_s=None)
    idle_head = NodeView("head", "cpu2", is_head=True, idle_since_s=0.0)
    result = plan(
        ClusterSnapshot(nodes=(idle_head, busy), now_s=1e9),
        GOLDEN_TYPES,
        ScalingPolicy(max_workers=0, idle_timeout_s=0),
    )
    assert result.terminate == ()


def test_lowering_max_workers_terminates_idle_excess_immediately():
    idle = [
        NodeView(f"w{i}", "cpu2", total={"CPU": 2}, available={"CPU": 2}, idle_since_s=90.0)
        for i in range(3)
    ]
    policy = ScalingPolicy(max_workers=1, idle_timeout_s=300)
    result = plan(snapshot(*idle, now_s=100.0), GOLDEN_TYPES, policy)
    assert sorted(result.terminate) == ["w0", "w1"]


def test_utilization_above_target_adds_a_worker():
    busy = NodeView("w1", "cpu2", total={"CPU": 2}, available={"CPU": 0})
    result = plan(snapshot(busy), GOLDEN_TYPES, ScalingPolicy(max_workers=5))
    assert result.launch == {"cpu2": 1}


def test_load_based_scale_up_is_not_undone_by_idle_scale_down():
    busy = NodeView("w1", "cpu2", total={"CPU": 2}, available={"CPU": 0})
    spare = NodeView("w2", "cpu2", total={"CPU": 2}, available={"CPU": 2}, idle_since_s=0.0)
    result = plan(snapshot(busy, spare, now_s=1e6), GOLDEN_TYPES, ScalingPolicy(max_workers=5))
    assert result.launch == {}
    assert result.terminate == ()


def test_upscaling_rate_caps_concurrent_pending_nodes():
    policy = ScalingPolicy(max_workers=50, upscaling_speed=1.0, min_concurrent_launches=5)
    result = plan(snapshot(demand=cpus(40)), {"cpu2": GOLDEN_TYPES["cpu2"]}, policy)
    assert result.num_launches == 5
    pending = [NodeView(f"p{i}", "cpu2", pending=True) for i in range(5)]
    again = plan(snapshot(*pending, demand=cpus(40)), {"cpu2": GOLDEN_TYPES["cpu2"]}, policy)
    assert again.num_launches == 0


def test_unknown_size_type_launches_one_node_then_waits_for_it():
    types = {"w": NodeType("w", None)}
    first = plan(snapshot(demand=cpus(10)), types, WIDE)
    assert first.launch == {"w": 1}
    second = plan(snapshot(NodeView("p", "w", pending=True), demand=cpus(10)), types, WIDE)
    assert second.launch == {}
    # Once live, it reports its size (4 CPUs) and the rest is packed for real.
    live = NodeView("p", "w", total={"CPU": 4}, available={"CPU": 0})
    third = plan(snapshot(live, demand=cpus(8)), types, WIDE)
    assert third.launch == {"w": 2}
    # ...and demand it can never hold becomes infeasible instead of relaunching it.
    fourth = plan(snapshot(live, demand=[{"GPU": 1}]), types, WIDE)
    assert fourth.infeasible == ({"GPU": 1},)


# ------------------------------------------------------------------ invariants


def check_invariants(snap, types, policy, result):
    workers = [n for n in snap.nodes if not n.is_head]
    by_id = {n.node_id: n for n in snap.nodes}
    assert set(result.launch) <= set(types)
    assert all(v > 0 for v in result.launch.values())
    # Never exceeds max_workers (and never grows a cluster already above it).
    after = len(workers) + result.num_launches - len(result.terminate)
    assert result.num_launches == 0 or after <= policy.max_workers
    counts = Counter(n.node_type for n in workers if n.node_id not in result.terminate)
    for name, n in result.launch.items():
        limit = types[name].max_workers
        assert limit is None or counts[name] + n <= limit
    assert len(set(result.terminate)) == len(result.terminate)
    for node_id in result.terminate:
        node = by_id[node_id]
        assert not node.is_head, "terminated the head"
        assert node.idle_since_s is not None, "terminated a busy node"
        assert not node.pending, "terminated a pending node"
    # Never terminates below min_workers unless above max_workers.
    if len(workers) <= policy.max_workers:
        assert after >= min(policy.min_workers, len(workers) + result.num_launches)
    # Infeasible bundles are those no node type can hold; a type of unknown size
    # is as big as its live nodes report.
    sizes = {name: t.resources for name, t in types.items()}
    for node in snap.nodes:
        if sizes.get(node.node_type, 0) is None and not node.pending and node.total:
            sizes[node.node_type] = node.total
    for bundle in result.infeasible:
        assert not any(
            size is None or all(size.get(k, 0) >= v for k, v in bundle.items())
            for size in sizes.values()
        )


def learn_sizes(types, snap):
    """What StandardAutoscaler remembers between rounds: sizes that live nodes reported."""
    learned = dict(types)
    for node in snap.nodes:
        t = learned.get(node.node_type)
        if t is not None and t.resources is None and not node.pending and node.total:
            learned[node.node_type] = dataclasses.replace(t, resources=dict(node.total))
    return learned


def apply(snap, result, now_s):
    """The cluster one round later: launches pending, terminations gone."""
    gone = set(result.terminate)
    nodes = [n for n in snap.nodes if n.node_id not in gone]
    for i, name in enumerate(Counter(result.launch).elements()):
        nodes.append(NodeView(f"new{now_s}-{i}", name, pending=True))
    return ClusterSnapshot(nodes=tuple(nodes), demand=snap.demand, now_s=now_s)


def test_exhaustive_small_clusters_respect_every_invariant():
    types = {"cpu2": GOLDEN_TYPES["cpu2"], "cpu8": GOLDEN_TYPES["cpu8"]}
    states = {
        "idle": dict(total={"CPU": 2}, available={"CPU": 2}, idle_since_s=0.0),
        "busy": dict(total={"CPU": 2}, available={"CPU": 0}),
        "half": dict(total={"CPU": 2}, available={"CPU": 1}),
        "pending": dict(pending=True),
    }
    cases = 0
    for n_workers in range(4):
        for kinds in itertools.product(states, repeat=n_workers):
            nodes = [NodeView(f"w{i}", "cpu2", **states[k]) for i, k in enumerate(kinds)]
            for n_demand, lo, hi, now in itertools.product(
                range(0, 7, 2), (0, 1, 2), (0, 2, 4), (0.0, 1e4)
            ):
                if lo > hi:
                    continue
                policy = ScalingPolicy(min_workers=lo, max_workers=hi, idle_timeout_s=60)
                snap = snapshot(*nodes, demand=cpus(n_demand), now_s=now)
                result = plan(snap, types, policy)
                check_invariants(snap, types, policy, result)
                # Stable: applying the plan and re-planning launches nothing more.
                again = plan(apply(snap, result, now), types, policy)
                assert again.num_launches == 0, (kinds, n_demand, lo, hi, result, again)
                cases += 1
    assert cases > 1000


resource_bundles = st.dictionaries(
    st.sampled_from(["CPU", "GPU", "memory"]), st.integers(1, 10).map(float), min_size=1
)
node_type_sets = st.dictionaries(
    st.sampled_from(["a", "b", "c", "d"]),
    st.tuples(
        st.one_of(st.none(), resource_bundles),
        st.integers(0, 2),
        st.one_of(st.none(), st.integers(0, 4)),
    ),
    min_size=1,
)


@st.composite
def scenarios(draw):
    raw_types = draw(node_type_sets)
    types = {}
    for name, (res, lo, hi) in raw_types.items():
        if hi is not None:
            lo = min(lo, hi)
        types[name] = NodeType(name, res, min_workers=lo, max_workers=hi)
    nodes = [HEAD]
    for i in range(draw(st.integers(0, 6))):
        name = draw(st.sampled_from(sorted(types)))
        kind = draw(st.sampled_from(["pending", "idle", "busy"]))
        total = types[name].resources or {"CPU": 2.0}
        if kind == "pending":
            nodes.append(NodeView(f"w{i}", name, pending=True))
        elif kind == "idle":
            since = draw(st.floats(0, 1000))
            nodes.append(NodeView(f"w{i}", name, total=total, available=total, idle_since_s=since))
        else:
            nodes.append(NodeView(f"w{i}", name, total=total, available={k: 0.0 for k in total}))
    lo = draw(st.integers(0, 4))
    policy = ScalingPolicy(
        min_workers=lo,
        max_workers=draw(st.integers(lo, 8)),
        idle_timeout_s=draw(st.floats(0, 600)),
        target_utilization_fraction=draw(st.floats(0.1, 1.0)),
        upscaling_speed=draw(st.floats(0.1, 4)),
    )
    demand = draw(st.lists(resource_bundles, max_size=12))
    snap = ClusterSnapshot(nodes=tuple(nodes), demand=tuple(demand), now_s=draw(st.floats(0, 2000)))
    return snap, types, policy


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_property_plans_respect_limits_and_never_kill_busy_nodes_or_head(scenario):
    snap, types, policy = scenario
    check_invariants(snap, types, policy, plan(snap, types, policy))


@settings(max_examples=200, deadline=None)
@given(scenarios())
def test_property_replanning_after_launch_does_not_relaunch_for_the_same_demand(scenario):
    snap, types, policy = scenario
    first = plan(snap, types, policy)
    second = plan(apply(snap, first, snap.now_s), learn_sizes(types, snap), policy)
    # Only the upscaling rate may hold launches back for a later round.
    if not any("upscaling rate" in r for r in first.reasons):
        assert second.num_launches == 0, (first, second)


# ------------------------------------------------------------------ multi-round simulation


def simulate(types, policy, demand, rounds=25, step_s=10.0):
    """Tasks that run forever: each round the scheduler places queued bundles on live
    nodes (first fit), the planner sees what is left, launches become live next round.
    Like StandardAutoscaler, the shell remembers the size a type's nodes reported."""
    types = dict(types)
    nodes: dict[str, dict] = {}  # id -> {type, pending, free, busy, since}
    queued = list(demand)
    history = []
    counter = itertools.count()
    for r in range(rounds):
        now = r * step_s
        for node in nodes.values():
            if node["pending"]:
                node["pending"] = False
                node["free"] = dict(types[node["type"]].resources or {"CPU": 2.0})
                node["total"] = dict(node["free"])
                node["since"] = now
                t = types[node["type"]]
                if t.resources is None:
                    types[node["type"]] = dataclasses.replace(t, resources=dict(node["total"]))
        still = []
        for bundle in queued:
            for node in nodes.values():
                if not node["pending"] and all(
                    node["free"].get(k, 0) >= v for k, v in bundle.items()
                ):
                    for k, v in bundle.items():
                        node["free"][k] -= v
                    node["busy"] = True
                    break
            else:
                still.append(bundle)
        queued = still
        views = [HEAD] + [
            NodeView(i, n["type"], pending=True)
            if n["pending"]
            else NodeView(
                i,
                n["type"],
                total=n["total"],
                available=dict(n["free"]),
                idle_since_s=None if n["busy"] else n["since"],
            )  # fmt: skip
            for i, n in nodes.items()
        ]
        snap = ClusterSnapshot(nodes=tuple(views), demand=tuple(queued), now_s=now)
        result = plan(snap, types, policy)
        check_invariants(snap, types, policy, result)
        for node_id in result.terminate:
            assert not nodes[node_id]["busy"], "terminated a node running tasks"
            del nodes[node_id]
        for name in Counter(result.launch).elements():
            nodes[f"n{next(counter)}"] = {"type": name, "pending": True, "busy": False}
        history.append(result)
    return history, queued


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_property_simulated_cluster_converges_without_oscillating(scenario):
    snap, types, policy = scenario
    policy = dataclasses.replace(policy, idle_timeout_s=30.0)
    history, queued = simulate(types, policy, snap.demand)
    # Converged: the last rounds neither launch nor terminate.
    for result in history[-5:]:
        assert result.num_launches == 0 and result.terminate == (), history
    # Bundles no type can hold never got a node.
    for bundle in history[-1].infeasible:
        assert bundle in queued


def test_simulated_golden_demand_lands_on_the_golden_nodes():
    history, queued = simulate(GOLDEN_TYPES, WIDE, cpus(9))
    assert history[0].launch == {"cpu8": 1, "cpu2": 1}
    assert queued == [] and all(r.num_launches == 0 for r in history[1:])


def test_planning_a_large_cluster_stays_fast():
    # 300 nodes and 3,000 queued bundles of two shapes: grouped packing keeps this in
    # milliseconds (it took ~6 s per round before bundles were grouped by shape).
    import time

    nodes = [HEAD] + [
        NodeView(f"w{i}", "cpu8", total={"CPU": 8}, available={"CPU": i % 3}) for i in range(300)
    ]
    demand = tuple({"CPU": 1} if i % 5 else {"CPU": 2, "GPU": 1} for i in range(3000))
    t0 = time.perf_counter()
    result = plan(
        ClusterSnapshot(tuple(nodes), demand), GOLDEN_TYPES, ScalingPolicy(max_workers=900)
    )
    assert time.perf_counter() - t0 < 5.0
    # 600 GPU bundles need gpu1 nodes; the upscaling rate allows 300 (= live workers) now.
    assert result.launch == {"gpu1": 300}
