"""The autoscaler's decisions, as one pure function.

    plan(ClusterSnapshot, node_types, ScalingPolicy) -> ScalingPlan

No clock, no sockets, no provider: the snapshot carries the time (``now_s``) and
what each node is doing, so the function is tested exhaustively and with
property-based tests.  The monitor (``autoscaler.py``) turns provider state and
GCS load into a snapshot and a plan into ``create_node``/``terminate_node`` calls.

The rules, in order:

1. Queued demand (resource bundles that found no room) is first packed onto the
   free capacity of live nodes and the full capacity of pending nodes (launched,
   not yet up): pending nodes count as capacity, so a second round never launches
   again for the same demand (no oscillation).
2. What is left is bin-packed onto new nodes of the cheapest-fitting type (best
   utilisation score, golden cases in ANCHORS.md). A bundle that fits no node type
   at all is *infeasible*: it is reported once as a warning and never launches.
3. Load-based scaling (Ray 0.7): when more than ``target_utilization_fraction`` of
   the workers' resources are in use, grow until it would not be.
4. Launches are capped by ``max_workers`` (global and per type) and by the
   upscaling rate; ``min_workers`` is always topped up.
5. Workers idle for ``idle_timeout_s`` are terminated down to ``min_workers``. The
   head, busy nodes, pending nodes and nodes that the demand was just packed onto
   are never terminated.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Mapping, Sequence

ResourceDict = Mapping[str, float]

# Resources a bundle may not leave unused on a node it launches: do not rent a GPU
# machine for CPU-only work while another type fits.
_SCARCE_RESOURCES = ("GPU",)
_EPSILON = 1e-9


@dataclasses.dataclass(frozen=True)
class NodeType:
    name: str
    # None: size unknown until a node of the type reports it (legacy worker_nodes
    # configs). Such a type absorbs all demand per node while one is pending.
    resources: ResourceDict | None
    min_workers: int = 0
    max_workers: int | None = None


@dataclasses.dataclass(frozen=True)
class NodeView:
    """What the planner knows about one node."""

    node_id: str
    node_type: str
    is_head: bool = False
    # Launched but not yet reporting load (booting, or running setup commands).
    pending: bool = False
    # Total and currently free resources as reported by the node (live nodes only).
    total: ResourceDict | None = None
    available: ResourceDict | None = None
    # Since when the node has had nothing in use; None while it is busy.
    idle_since_s: float | None = None


@dataclasses.dataclass(frozen=True)
class ClusterSnapshot:
    nodes: tuple[NodeView, ...]
    # Resource bundles queued because no live node had room for them.
    demand: tuple[ResourceDict, ...] = ()
    now_s: float = 0.0


@dataclasses.dataclass(frozen=True)
class ScalingPolicy:
    min_workers: int = 0
    max_workers: int = 2
    idle_timeout_s: float = 300.0
    target_utilization_fraction: float = 0.8
    # At most max(5, upscaling_speed * live workers) nodes may be pending at once.
    upscaling_speed: float = 1.0
    min_concurrent_launches: int = 5


@dataclasses.dataclass(frozen=True)
class ScalingPlan:
    launch: Mapping[str, int]
    terminate: tuple[str, ...]
    # Bundles that no node type can ever hold: warn, never launch.
    infeasible: tuple[ResourceDict, ...] = ()
    # Bundles that a node type could hold but limits (max_workers, rate) hold back.
    waiting: tuple[ResourceDict, ...] = ()
    reasons: tuple[str, ...] = ()

    @property
    def num_launches(self) -> int:
        return sum(self.launch.values())


def plan(
    snapshot: ClusterSnapshot,
    node_types: Mapping[str, NodeType],
    policy: ScalingPolicy,
) -> ScalingPlan:
    """Decide which nodes to launch and terminate; see the module docstring."""
    node_types = _with_reported_sizes(node_types, snapshot.nodes)
    result = _plan_once(snapshot, node_types, policy)
    terminated: tuple[str, ...] = ()
    reasons: dict[str, None] = {}
    # Terminations free room under max_workers: plan again without those nodes until
    # nothing more is terminated, so a launch held back by the limit (min_workers of
    # another type, say) does not wait for later rounds. Each pass removes a node,
    # so this ends within len(nodes) passes.
    while result.terminate:
        terminated += result.terminate
        reasons.update(dict.fromkeys(result.reasons))
        gone = set(terminated)
        snapshot = dataclasses.replace(
            snapshot, nodes=tuple(n for n in snapshot.nodes if n.node_id not in gone)
        )
        result = _plan_once(snapshot, node_types, policy)
    reasons.update(dict.fromkeys(result.reasons))
    return dataclasses.replace(result, terminate=terminated, reasons=tuple(reasons))


def _with_reported_sizes(
    node_types: Mapping[str, NodeType], nodes: Sequence[NodeView]
) -> Mapping[str, NodeType]:
    """A type of unknown size takes the size its live nodes report (else it never
    turns infeasible, and demand it cannot hold would relaunch it forever)."""
    sized = dict(node_types)
    for node in nodes:
        t = sized.get(node.node_type)
        if t is not None and t.resources is None and not node.pending and node.total:
            sized[node.node_type] = dataclasses.replace(t, resources=dict(node.total))
    return sized


def _plan_once(
    snapshot: ClusterSnapshot,
    node_types: Mapping[str, NodeType],
    policy: ScalingPolicy,
) -> ScalingPlan:
    workers = [n for n in snapshot.nodes if not n.is_head]
    reasons: list[str] = []

    # 1. Pack demand onto what exists (live free capacity, pending full capacity).
    bins = [_capacity_of(n, node_types) for n in snapshot.nodes]
    unknown_pending = [n for n in workers if n.pending and _capacity_of(n, node_types) is None]
    unfit, used_bins = _pack(list(snapshot.demand), bins)
    if unknown_pending:
        # A pending node of unknown size may well hold everything: wait for it.
        used_bins |= {i for i, n in enumerate(snapshot.nodes) if n in unknown_pending}
        unfit = []
    demand_hosts = {snapshot.nodes[i].node_id for i in used_bins}

    # 2. Bundles no node type can hold are infeasible.
    feasible, infeasible = [], []
    for bundle in unfit:
        (feasible if _fits_some_type(bundle, node_types) else infeasible).append(bundle)
    if infeasible:
        reasons.append(f"{len(infeasible)} bundle(s) fit no node type: {_shapes(infeasible)}")

    # Head-room under the global and per-type maxima.
    counts = Counter(n.node_type for n in workers)
    room = max(0, policy.max_workers - len(workers))
    type_room = {
        name: (math.inf if t.max_workers is None else max(0, t.max_workers - counts[name]))
        for name, t in node_types.items()
    }
    launch: Counter[str] = Counter()

    def take(name: str, count: int) -> int:
        nonlocal room
        count = int(min(count, room, type_room.get(name, 0)))
        if count > 0:
            launch[name] += count
            room -= count
            type_room[name] -= count
        return max(count, 0)

    # 4a. min_workers (global and per type) first: they do not depend on load.
    for name, t in sorted(node_types.items()):
        take(name, t.min_workers - counts[name])
    short = policy.min_workers - len(workers) - launch.total()
    if short > 0:
        default = _default_worker_type(node_types)
        if default is not None:
            take(default, short)

    # 2b. New nodes for feasible demand, after what step 4a launches anyway.
    new_bins = [_empty_bin(node_types[name]) for name in launch.elements()]
    feasible, _ = _pack(feasible, new_bins)
    wanted = _bin_pack_new_nodes(feasible, node_types, type_room)
    waiting: list[ResourceDict] = []
    for name, bundles in wanted:
        if take(name, 1) == 0:
            waiting.extend(bundles)

    # 3. Load-based target (Ray 0.7): keep utilisation under the target fraction.
    target = _utilization_target(workers, node_types, policy)
    if target > len(workers) + launch.total():
        default = _default_worker_type(node_types)
        if default is not None:
            added = take(default, target - len(workers) - launch.total())
            if added:
                reasons.append(f"utilization above {policy.target_utilization_fraction:.0%}")

    # 4b. Upscaling rate: cap how many nodes may be pending at once.
    launch = _rate_limit(launch, workers, policy, node_types, reasons)
    if waiting:
        reasons.append(f"{len(waiting)} bundle(s) wait for max_workers/max per type")

    # Never scale below the load-based target either, or the next round relaunches.
    keep = max(policy.min_workers, target)
    terminate = _idle_to_terminate(
        workers, snapshot.now_s, policy, node_types, launch, demand_hosts, keep
    )
    return ScalingPlan(
        launch=dict(launch),
        terminate=tuple(terminate),
        infeasible=tuple(infeasible),
        waiting=tuple(waiting),
        reasons=tuple(reasons),
    )


def _capacity_of(node: NodeView, node_types: Mapping[str, NodeType]) -> dict[str, float] | None:
    """Room a node offers for queued demand: free resources if live, everything if pending."""
    if not node.pending and node.available is not None:
        return dict(node.available)
    if node.total is not None:
        return dict(node.total)
    declared = node_types.get(node.node_type)
    if declared is None or declared.resources is None:
        return None
    return dict(declared.resources)


def _empty_bin(node_type: NodeType) -> dict[str, float] | None:
    return None if node_type.resources is None else dict(node_type.resources)


def _fits(bundle: ResourceDict, free: Mapping[str, float]) -> bool:
    return all(free.get(k, 0.0) + _EPSILON >= v for k, v in bundle.items() if v > 0)


def _how_many(bundle: ResourceDict, free: Mapping[str, float]) -> int:
    """How many copies of ``bundle`` fit into ``free``."""
    counts = [math.floor((free.get(k, 0.0) + _EPSILON) / v) for k, v in bundle.items() if v > 0]
    return max(0, min(counts)) if counts else 1 << 30


def _take(bundle: ResourceDict, free: dict[str, float], times: int = 1) -> None:
    for k, v in bundle.items():
        if v > 0:
            free[k] = free.get(k, 0.0) - v * times


def _group(demand: Sequence[ResourceDict]) -> list[list[ResourceDict]]:
    """Identical bundles together, biggest shape first (first-fit-decreasing order).

    Demand is usually thousands of copies of a few shapes: packing per shape keeps a
    round at milliseconds for thousands of nodes and bundles.
    """
    groups: dict[tuple, list[ResourceDict]] = {}
    for bundle in demand:
        groups.setdefault(_shape(bundle), []).append(bundle)
    order = sorted(groups, key=lambda shape: _bundle_size(dict(shape)), reverse=True)
    return [groups[shape] for shape in order]


def _shape(bundle: ResourceDict) -> tuple:
    return tuple(sorted((k, float(v)) for k, v in bundle.items() if v > 0))


def _pack(
    demand: Sequence[ResourceDict], bins: Sequence[dict[str, float] | None]
) -> tuple[list[ResourceDict], set[int]]:
    """First-fit-decreasing onto existing bins (mutated). Returns (unfit, used bin indices)."""
    unfit, used = [], set()
    for group in _group(demand):
        start = 0
        for i, free in enumerate(bins):
            if start == len(group):
                break
            if free is None:
                continue
            n = min(len(group) - start, _how_many(group[0], free))
            if n > 0:
                _take(group[0], free, n)
                used.add(i)
                start += n
        unfit.extend(group[start:])
    return unfit, used


def _bundle_size(bundle: ResourceDict) -> tuple:
    return (sum(1 for k in _SCARCE_RESOURCES if bundle.get(k, 0) > 0), sum(bundle.values()))


def _fits_some_type(bundle: ResourceDict, node_types: Mapping[str, NodeType]) -> bool:
    # A type of unknown size is assumed to fit anything, or nothing would ever launch.
    return any(t.resources is None or _fits(bundle, t.resources) for t in node_types.values())


def _utilization_score(
    groups: list[list[ResourceDict]], left: list[int], node_type: NodeType
) -> tuple[tuple, list[int]] | None:
    """Pack as many bundles as fit on one empty node of this type; score the result.

    Score (higher is better): no scarce resource left idle, number of the node's
    resource kinds in use, the least-used kind's utilisation, mean utilisation, then
    bundles placed (so 9 x CPU:1 takes one 8-CPU node, not four 2-CPU ones).
    Returns the score and how many bundles of each group it placed.
    """
    if node_type.resources is None:
        return (False, 0, 0.0, 0.0, sum(left)), list(left)
    free = dict(node_type.resources)
    placed = [0] * len(groups)
    for i, group in enumerate(groups):
        if left[i]:
            placed[i] = min(left[i], _how_many(group[0], free))
            _take(group[0], free, placed[i])
    if not any(placed):
        return None
    totals = {k: v for k, v in node_type.resources.items() if v > 0}
    utils = {k: (v - free[k]) / v for k, v in totals.items()}
    wasted_scarce = any(k in totals and utils[k] <= 0 for k in _SCARCE_RESOURCES)
    in_use = sum(1 for u in utils.values() if u > 0)
    used = [u for u in utils.values() if u > 0] or [0.0]
    score = (not wasted_scarce, in_use, min(used), sum(used) / len(used), sum(placed))
    return score, placed


def _bin_pack_new_nodes(
    demand: list[ResourceDict],
    node_types: Mapping[str, NodeType],
    type_room: Mapping[str, float],
) -> list[tuple[str, list[ResourceDict]]]:
    """Greedy: repeatedly open the node type with the best score for what is left."""
    groups = _group(demand)
    left = [len(g) for g in groups]
    room = dict(type_room)
    chosen: list[tuple[str, list[ResourceDict]]] = []

    def take(counts: list[int]) -> list[ResourceDict]:
        out = []
        for i, n in enumerate(counts):
            start = len(groups[i]) - left[i]
            out.extend(groups[i][start : start + n])
            left[i] -= n
        return out

    while any(left):
        best = None
        for name in sorted(node_types):
            if room.get(name, 0) <= 0:
                continue
            scored = _utilization_score(groups, left, node_types[name])
            if scored is not None and (best is None or scored[0] > best[0]):
                best = (scored[0], name, scored[1])
        if best is None:
            # Everything left is held back by per-type maxima.
            chosen.append(("", take(list(left))))
            break
        _, name, placed = best
        room[name] -= 1
        chosen.append((name, take(placed)))
    return chosen


def _default_worker_type(node_types: Mapping[str, NodeType]) -> str | None:
    """The type min_workers and load-based scaling use: the legacy one, else the smallest."""
    candidates = [t for t in node_types.values() if t.max_workers != 0]
    if not candidates:
        return None
    return min(
        candidates,
        key=lambda t: (t.resources is not None, sum((t.resources or {}).values()), t.name),
    ).name


def _utilization_target(
    workers: list[NodeView], node_types: Mapping[str, NodeType], policy: ScalingPolicy
) -> int:
    live = [n for n in workers if not n.pending and n.total is not None]
    if not live:
        return 0
    fractions = []
    for node in live:
        used = [
            (total - (node.available or {}).get(k, total)) / total
            for k, total in node.total.items()
            if total > 0
        ]
        fractions.append(max(used, default=0.0))
    used_nodes = sum(fractions)
    return math.ceil(used_nodes / policy.target_utilization_fraction - _EPSILON)


def _rate_limit(
    launch: Counter[str],
    workers: list[NodeView],
    policy: ScalingPolicy,
    node_types: Mapping[str, NodeType],
    reasons: list[str],
) -> Counter[str]:
    pending = sum(1 for n in workers if n.pending)
    live = len(workers) - pending
    cap = max(policy.min_concurrent_launches, math.ceil(policy.upscaling_speed * live))
    allowed = max(0, cap - pending)
    if launch.total() <= allowed:
        return launch
    reasons.append(f"upscaling rate: {allowed} of {launch.total()} launches this round")
    # Keep min_workers types first (sorted by name for determinism), trimming the tail.
    capped: Counter[str] = Counter()
    for name in sorted(launch, key=lambda n: (-node_types[n].min_workers, n)):
        n = min(launch[name], allowed - capped.total())
        if n > 0:
            capped[name] = n
    return capped


def _idle_to_terminate(
    workers: list[NodeView],
    now_s: float,
    policy: ScalingPolicy,
    node_types: Mapping[str, NodeType],
    launch: Counter[str],
    demand_hosts: set[str],
    keep: int,
) -> list[str]:
    counts = Counter(n.node_type for n in workers)
    total = len(workers)
    candidates = [
        n
        for n in workers
        if not n.pending
        and n.idle_since_s is not None
        and n.node_id not in demand_hosts
        and (now_s - n.idle_since_s >= policy.idle_timeout_s or total > policy.max_workers)
    ]
    # Longest idle first; ties by id so the result is deterministic.
    candidates.sort(key=lambda n: (n.idle_since_s, n.node_id))
    out = []
    for node in candidates:
        timed_out = now_s - node.idle_since_s >= policy.idle_timeout_s
        excess = total > policy.max_workers
        t = node_types.get(node.node_type)
        type_min = t.min_workers if t is not None else 0
        if not (timed_out or excess):
            continue
        if total + launch.total() <= keep and not excess:
            break
        if counts[node.node_type] + launch[node.node_type] <= type_min and not excess:
            continue
        out.append(node.node_id)
        counts[node.node_type] -= 1
        total -= 1
    return out


def _shapes(bundles: list[ResourceDict]) -> str:
    shapes = Counter(tuple(sorted((k, v) for k, v in b.items() if v > 0)) for b in bundles)
    return ", ".join(f"{n} x {dict(shape)}" for shape, n in shapes.items())
