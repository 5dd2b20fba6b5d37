"""Resource arithmetic for one node (pure, no I/O).

Quantities are kept in units of 1/10000 so fractional requests (``num_gpus=0.5``)
add up exactly. Unit resources (GPUs and custom resources) are also tracked per
instance so a lease can be told *which* GPU ids it holds: a fractional request
packs onto one instance, whole requests take whole instances.
"""

from __future__ import annotations

import dataclasses
import math

SCALE = 10_000
UNIT_RESOURCES = ("GPU",)  # resources whose instances get ids (CUDA_VISIBLE_DEVICES)


def to_units(amount: float) -> int:
    return int(round(amount * SCALE))


def from_units(units: int) -> float:
    value = units / SCALE
    return int(value) if value == int(value) else value


def normalize_shape(shape: dict[str, float]) -> dict[str, float]:
    """Drop zero entries and check the values."""
    out = {}
    for name, amount in shape.items():
        if not isinstance(amount, int | float) or isinstance(amount, bool) or amount < 0:
            raise ValueError(f"Resource {name!r} must be a non-negative number, got {amount!r}")
        if amount > 1 and amount != int(amount):
            raise ValueError(
                f"Resource {name!r}: fractional quantities must be below 1 (got {amount}); "
                "use whole numbers above 1."
            )
        if amount:
            out[name] = amount
    return out


def shape_key(shape: dict[str, float]) -> tuple:
    return tuple(sorted(shape.items()))


@dataclasses.dataclass
class Allocation:
    """What one lease holds: amounts plus, for unit resources, (instance, fraction) pairs."""

    amounts: dict[str, int]
    instances: dict[str, list[tuple[int, int]]]

    def resource_ids(self) -> dict[str, list[tuple[int, float]]]:
        ids = {name: [(0, from_units(units))] for name, units in self.amounts.items()}
        ids.update({
            name: [(idx, from_units(units)) for idx, units in pairs]
            for name, pairs in self.instances.items()
        })
        return ids


class NodeResources:
    """Total and available resources of one node.

    ``device_ids``: per unit resource, the id of each instance as the hardware names it
    (a node started with ``CUDA_VISIBLE_DEVICES=4,5,6`` hands out GPUs 4, 5 and 6);
    instances without one are numbered from 0."""

    def __init__(self, total: dict[str, float],
                 device_ids: dict[str, list[int | str]] | None = None):
        self.total = {k: to_units(v) for k, v in total.items() if v}
        self.available = dict(self.total)
        self._instances = {
            name: [SCALE] * int(math.floor(self.total[name] / SCALE))
            for name in UNIT_RESOURCES
            if name in self.total
        }
        self.device_ids = {
            name: list((device_ids or {}).get(name, ()))[:len(free)]
            + list(range(len((device_ids or {}).get(name, ())), len(free)))
            for name, free in self._instances.items()}

    def resource_ids(self, alloc: Allocation) -> dict[str, list[tuple[int | str, float]]]:
        """What a lease holds, unit resources by device id (the worker's
        ``CUDA_VISIBLE_DEVICES`` and ``ray.get_gpu_ids()``)."""
        ids: dict[str, list[tuple[int | str, float]]] = {
            name: list(pairs) for name, pairs in alloc.resource_ids().items()}
        for name in alloc.instances:
            ids[name] = self.device_pairs(name, ids[name])
        return ids

    def device_pairs(self, name: str, pairs) -> list:
        devices = self.device_ids.get(name, [])
        return [(devices[idx] if idx < len(devices) else idx, amount) for idx, amount in pairs]

    def feasible(self, shape: dict[str, float]) -> bool:
        """Could the node ever run this (with everything idle)?"""
        return all(self.total.get(k, 0) >= to_units(v) for k, v in shape.items())

    def can_allocate(self, shape: dict[str, float]) -> bool:
        for name, amount in shape.items():
            units = to_units(amount)
            if self.available.get(name, 0) < units:
                return False
            if name in self._instances and self._pick_instances(name, units) is None:
                return False
        return True

    def _pick_instances(self, name: str, units: int):
        free = self._instances[name]
        if units < SCALE:  # a fraction packs onto the fullest instance that fits
            best = None
            for idx, avail in enumerate(free):
                if avail >= units and (best is None or avail < free[best]):
                    best = idx
            return None if best is None else [(best, units)]
        whole = [idx for idx, avail in enumerate(free) if avail == SCALE]
        count = units // SCALE
        return [(idx, SCALE) for idx in whole[:count]] if len(whole) >= count else None

    def allocate(self, shape: dict[str, float]) -> Allocation | None:
        if not self.can_allocate(shape):
            return None
        amounts, instances = {}, {}
        for name, amount in shape.items():
            units = to_units(amount)
            self.available[name] -= units
            amounts[name] = units
            if name in self._instances:
                picked = self._pick_instances(name, units)
                for idx, used in picked:
                    self._instances[name][idx] -= used
                instances[name] = picked
        return Allocation(amounts, instances)

    def release(self, alloc: Allocation) -> None:
        for name, units in alloc.amounts.items():
            self.available[name] = min(self.total.get(name, 0), self.available.get(name, 0) + units)
        for name, pairs in alloc.instances.items():
            for idx, used in pairs:
                self._instances[name][idx] = min(SCALE, self._instances[name][idx] + used)

    def lend(self, name: str, units: int) -> None:
        """Give back ``units`` of a held resource while its holder is blocked."""
        self.available[name] = self.available.get(name, 0) + units

    def reclaim(self, name: str, units: int) -> None:
        # May go negative for a moment: the blocked task resumes even if the
        # lent CPU is busy (Ray oversubscribes rather than deadlocks here).
        self.available[name] = self.available.get(name, 0) - units

    def add_resource(self, name: str, units: int) -> None:
        """Grow a resource (a committed placement-group bundle adds its group resources)."""
        self.total[name] = self.total.get(name, 0) + units
        self.available[name] = self.available.get(name, 0) + units

    def remove_resource(self, name: str, units: int) -> None:
        """Shrink a resource; it disappears at zero (callers release its leases first)."""
        left = self.total.get(name, 0) - units
        if left <= 0:
            self.total.pop(name, None)
            self.available.pop(name, None)
        else:
            self.total[name] = left
            self.available[name] = min(left, self.available.get(name, 0) - units)

    def total_dict(self) -> dict[str, float]:
        return {k: from_units(v) for k, v in self.total.items()}

    def available_dict(self) -> dict[str, float]:
        return {k: from_units(max(0, v)) for k, v in self.available.items()}
