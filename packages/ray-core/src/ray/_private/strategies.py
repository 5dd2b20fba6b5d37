"""Scheduling strategies (Ray 2.x ``scheduling_strategy=``), as plain values.

Re-exported by ``ray.util.scheduling_strategies``. ``"DEFAULT"`` (or None) packs
work onto the submitting node first and spills when it is full; ``"SPREAD"``
takes turns over the nodes that have room; the two classes below pin work to a
placement group's bundle or to one node.
"""

from __future__ import annotations

from ray._private.raylet.placement import rewrite_shape

STRING_STRATEGIES = ("DEFAULT", "SPREAD")


class PlacementGroupSchedulingStrategy:
    """Run in ``placement_group``: in bundle ``placement_group_bundle_index`` (-1: any);
    with ``placement_group_capture_child_tasks`` the tasks and actors it starts go into
    the same group unless they say otherwise."""

    def __init__(self, placement_group, placement_group_bundle_index: int = -1,
                 placement_group_capture_child_tasks: bool | None = None):
        if not hasattr(placement_group, "bundle_specs") or not hasattr(placement_group, "id"):
            raise TypeError(
                "PlacementGroupSchedulingStrategy needs a PlacementGroup (from "
                f"ray.util.placement_group(...)), got {placement_group!r}")
        index = placement_group_bundle_index
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"placement_group_bundle_index must be an int, got {index!r}")
        count = len(placement_group.bundle_specs)
        if not -1 <= index < count:
            raise ValueError(
                f"placement_group_bundle_index={index} is out of range: placement group "
                f"{placement_group.id.hex()} has {count} bundle(s) (valid: 0..{count - 1}, "
                "or -1 for any bundle).")
        self.placement_group = placement_group
        self.placement_group_bundle_index = index
        self.placement_group_capture_child_tasks = bool(placement_group_capture_child_tasks)

    def shape_in_group(self, shape: dict[str, float], what: str) -> dict[str, float]:
        """``shape`` rewritten to the group's resources; refuses one no bundle can hold."""
        pg = self.placement_group
        index = self.placement_group_bundle_index
        bundles = pg.bundle_specs if index < 0 else [pg.bundle_specs[index]]
        if not any(all(b.get(k, 0) >= v - 1e-9 for k, v in shape.items()) for b in bundles):
            where = "any bundle" if index < 0 else f"bundle {index} ({bundles[0]})"
            raise ValueError(
                f"{what} asks for {shape} but {where} of placement group {pg.id.hex()} "
                f"cannot hold it (bundles: {pg.bundle_specs}). Ask for less (num_cpus=..., "
                "num_gpus=..., resources=...) or create the group with bigger bundles.")
        return rewrite_shape(shape, pg.id.hex(), index)

    def __reduce__(self):
        return (PlacementGroupSchedulingStrategy, (
            self.placement_group, self.placement_group_bundle_index,
            self.placement_group_capture_child_tasks))

    def __repr__(self):
        return (f"PlacementGroupSchedulingStrategy({self.placement_group!r}, "
                f"placement_group_bundle_index={self.placement_group_bundle_index})")


class NodeAffinitySchedulingStrategy:
    """Run on node ``node_id`` (hex, as ``ray.get_runtime_context().get_node_id()``).
    ``soft=False``: fail with ``TaskUnschedulableError`` / ``ActorUnschedulableError``
    if that node is dead or unknown; ``soft=True``: run elsewhere then, and also when
    the node has no room right now."""

    def __init__(self, node_id: str, soft: bool, _spill_on_unavailable: bool = False,
                 _fail_on_unavailable: bool = False):
        if not isinstance(node_id, str) or not node_id:
            raise TypeError(
                f"NodeAffinitySchedulingStrategy needs a node id as a hex string (e.g. "
                f"ray.get_runtime_context().get_node_id()), got {node_id!r}")
        self.node_id = node_id
        self.soft = bool(soft)
        self._spill_on_unavailable = _spill_on_unavailable
        self._fail_on_unavailable = _fail_on_unavailable

    def __repr__(self):
        return f"NodeAffinitySchedulingStrategy(node_id={self.node_id!r}, soft={self.soft})"


def effective_strategy(opts):
    """The strategy an options object asks for (old ``placement_group=`` spelling
    included), checked; None means the default."""
    strategy = opts.scheduling_strategy
    pg = opts.placement_group
    if pg is not None and pg != "default" and not getattr(pg, "is_empty", False):
        if strategy not in (None, "DEFAULT"):
            raise ValueError("Pass either scheduling_strategy=... or placement_group=..., "
                             "not both.")
        strategy = PlacementGroupSchedulingStrategy(
            pg, opts.placement_group_bundle_index, opts.placement_group_capture_child_tasks)
    elif opts.placement_group_bundle_index != -1:
        raise ValueError("placement_group_bundle_index needs placement_group=... (or use "
                         "scheduling_strategy=PlacementGroupSchedulingStrategy(pg, index)).")
    if strategy is None or strategy == "DEFAULT":
        return None
    if strategy == "SPREAD" or isinstance(
            strategy, PlacementGroupSchedulingStrategy | NodeAffinitySchedulingStrategy):
        return strategy
    raise ValueError(
        f"Unknown scheduling_strategy {strategy!r}: use 'DEFAULT', 'SPREAD', "
        "PlacementGroupSchedulingStrategy(pg, bundle_index) or "
        "NodeAffinitySchedulingStrategy(node_id, soft) (from ray.util.scheduling_strategies).")


def strategy_key(strategy) -> tuple:
    """What sets a strategy's tasks apart in the owner's per-shape queues."""
    if strategy == "SPREAD":
        return (("@strategy", "SPREAD"),)
    if isinstance(strategy, NodeAffinitySchedulingStrategy):
        return (("@node", strategy.node_id, strategy.soft),)
    return ()
