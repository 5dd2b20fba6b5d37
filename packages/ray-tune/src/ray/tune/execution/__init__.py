"""Ray 2.x module path for Tune's execution helpers (``PlacementGroupFactory``)."""

from ray.tune.execution.placement_groups import PlacementGroupFactory

__all__ = ["PlacementGroupFactory"]
