"""Placement groups (Ray 2.x API): reserve bundles of resources across nodes, then
schedule tasks and actors into them.

::

    from ray.util.placement_group import placement_group, remove_placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    pg = placement_group([{"CPU": 1}, {"CPU": 1}], strategy="STRICT_SPREAD")
    ray.get(pg.ready())
    f.options(scheduling_strategy=PlacementGroupSchedulingStrategy(
        pg, placement_group_bundle_index=0)).remote()
    remove_placement_group(pg)

Strategies: PACK (few nodes, best effort), SPREAD (many nodes, best effort),
STRICT_PACK (one node), STRICT_SPREAD (one bundle per node). A group that does not
fit yet stays PENDING until resources free up or nodes join. How it works:
docs/architecture.md, "Placement groups".
"""

from __future__ import annotations

from ray._private.runtime import placement_groups as _pg
from ray._private.runtime.placement_groups import PlacementGroup, PlacementGroupID


def placement_group(bundles: list[dict], strategy: str = "PACK", name: str = "",
                    lifetime: str | None = None,
                    _soft_target_node_id: str | None = None) -> PlacementGroup:
    """Ask for ``bundles`` (e.g. ``[{"CPU": 1, "GPU": 1}] * 2``) placed by ``strategy``.

    Returns at once; ``pg.ready()`` / ``pg.wait(timeout_seconds)`` tell when every
    bundle is reserved. ``name=`` makes it findable with :func:`get_placement_group`;
    ``lifetime="detached"`` keeps it after this job ends. ``_soft_target_node_id``
    (STRICT_PACK only): try that node first."""
    return _pg.create(bundles, strategy, name, lifetime, _soft_target_node_id)


def remove_placement_group(placement_group: PlacementGroup) -> None:
    """Give the group's resources back; tasks and actors running in it are killed
    (their callers get the usual worker-died / actor-died errors) and ones still
    waiting for it fail with TaskPlacementGroupRemoved."""
    _pg.remove(placement_group)


def get_placement_group(placement_group_name: str, namespace: str | None = None):
    """The live group created with ``name=placement_group_name``."""
    return _pg.get(placement_group_name, namespace)


def get_current_placement_group() -> PlacementGroup | None:
    """The group the calling task or actor runs in (None in the driver or outside)."""
    return _pg.current()


def placement_group_table(placement_group: PlacementGroup | None = None) -> dict:
    """State (PENDING / CREATED / RESCHEDULING / REMOVED), bundles and the node of each
    placed bundle, for one group or all (keyed by id hex)."""
    return _pg.table(placement_group)


__all__ = [
    "PlacementGroup",
    "PlacementGroupID",
    "get_current_placement_group",
    "get_placement_group",
    "placement_group",
    "placement_group_table",
    "remove_placement_group",
]
