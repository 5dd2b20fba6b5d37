"""Ray 2.x scheduling strategies for ``.options(scheduling_strategy=...)``.

``"DEFAULT"`` (or None), ``"SPREAD"``, :class:`PlacementGroupSchedulingStrategy`
and :class:`NodeAffinitySchedulingStrategy`."""

from ray._private.strategies import (
    NodeAffinitySchedulingStrategy,
    PlacementGroupSchedulingStrategy,
)

__all__ = ["NodeAffinitySchedulingStrategy", "PlacementGroupSchedulingStrategy"]
