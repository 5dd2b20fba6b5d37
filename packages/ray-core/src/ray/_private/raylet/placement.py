"""Placement groups, the pure part: where bundles go and what they add to a node.

A placement group is a list of *bundles* (resource shapes) reserved together. The
head raylet's ``PlacementGroupManager`` (``pg_manager.py``) decides where each bundle
goes with :func:`place_bundles` over the nodes' available resources, then reserves
them in two phases through every chosen raylet's :class:`BundleLedger`:

* ``prepare`` takes the bundle's resources out of the node's available pool;
* ``commit`` adds the bundle's *group resources*: for ``{"CPU": 2}`` as bundle 1
  of group ``<pg>``, ``CPU_group_1_<pg>: 2`` and ``CPU_group_<pg>: 2`` (the
  wildcard, summed over the node's bundles of that group), plus the markers
  ``bundle_group_1_<pg>`` and ``bundle_group_<pg>`` (1000 each);
* ``release`` undoes either (a failed prepare elsewhere, or a removed group).

A task scheduled into the group has its shape rewritten to those names
(:func:`rewrite_shape`), so the ordinary lease scheduler, queueing and spillback
place it without knowing about groups.
"""

from __future__ import annotations

import dataclasses

from ray._private.raylet.resources import Allocation, NodeResources, to_units

STRATEGIES = ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD")
BUNDLE_MARKER = "bundle"
MARKER_AMOUNT = 1000  # per bundle; a task with no resources asks for 1/1000 of one
_EPS = 1e-9
PG_ID_BYTES = 18  # as in Ray: a placement group id prints as 36 hex digits


def indexed_name(resource: str, index: int, pg_hex: str) -> str:
    return f"{resource}_group_{index}_{pg_hex}"


def wildcard_name(resource: str, pg_hex: str) -> str:
    return f"{resource}_group_{pg_hex}"


def group_of(resource: str) -> str | None:
    """The placement group id (hex) a group resource belongs to, or None."""
    head, sep, tail = resource.rpartition("_group_")
    if not sep or not head:
        return None
    pg_hex = tail.rpartition("_")[2]
    if len(pg_hex) != PG_ID_BYTES * 2 or not all(c in "0123456789abcdef" for c in pg_hex):
        return None
    return pg_hex


def rewrite_shape(shape: dict[str, float], pg_hex: str, index: int) -> dict[str, float]:
    """The shape a task asks for inside a group's bundle ``index`` (-1: any bundle).

    An indexed request also takes the wildcard amount, so tasks sent to "any bundle"
    and to a given bundle never book more than the node's bundles hold together."""
    out: dict[str, float] = {}
    for name, amount in shape.items():
        out[wildcard_name(name, pg_hex)] = amount
        if index >= 0:
            out[indexed_name(name, index, pg_hex)] = amount
    if not out:  # a task holding no resources still has to land on the bundle's node
        marker = (indexed_name(BUNDLE_MARKER, index, pg_hex) if index >= 0
                  else wildcard_name(BUNDLE_MARKER, pg_hex))
        out[marker] = 1 / MARKER_AMOUNT
    return out


def group_resources(shape: dict[str, float], pg_hex: str, index: int) -> dict[str, float]:
    """What committing bundle ``index`` adds to its node (wildcards are summed there)."""
    out = {}
    for name, amount in shape.items():
        out[indexed_name(name, index, pg_hex)] = amount
        out[wildcard_name(name, pg_hex)] = amount
    out[indexed_name(BUNDLE_MARKER, index, pg_hex)] = MARKER_AMOUNT
    out[wildcard_name(BUNDLE_MARKER, pg_hex)] = MARKER_AMOUNT
    return out


# -- where bundles go -------------------------------------------------------------------
def _fits(shape: dict[str, float], available: dict[str, float]) -> bool:
    return all(available.get(k, 0) >= v - _EPS for k, v in shape.items())


def _take(shape: dict[str, float], available: dict[str, float]) -> None:
    for k, v in shape.items():
        available[k] = available.get(k, 0) - v


def _sum(shapes) -> dict[str, float]:
    total: dict[str, float] = {}
    for shape in shapes:
        for k, v in shape.items():
            total[k] = total.get(k, 0) + v
    return total


def place_bundles(
    bundles: list[dict[str, float]],
    strategy: str,
    nodes: dict[str, dict[str, float]],
    fixed: dict[int, str] | None = None,
    prefer: str | None = None,
) -> dict[int, str] | None:
    """Choose a node for every bundle not in ``fixed``, or None if none fits now.

    ``nodes`` maps node id -> available resources (``fixed`` bundles are already
    reserved, so not counted in them). PACK puts bundles on as few nodes as it can,
    SPREAD on as many; the STRICT forms fail instead of bending. Greedy, in bundle
    order, ties broken by node id (deterministic). STRICT_PACK tries ``prefer`` first."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown placement strategy {strategy!r}; use one of {STRATEGIES}")
    fixed = dict(fixed or {})
    todo = [i for i in range(len(bundles)) if i not in fixed]
    avail = {node: dict(res) for node, res in nodes.items()}
    if strategy == "STRICT_PACK":
        return _strict_pack(bundles, todo, avail, fixed, prefer)
    placed = dict(fixed)
    for i in todo:
        node = _choose(bundles[i], strategy, avail, placed)
        if node is None:
            return None
        _take(bundles[i], avail[node])
        placed[i] = node
    return {i: placed[i] for i in todo}


def _strict_pack(bundles, todo, avail, fixed, prefer=None):
    need = _sum(bundles[i] for i in todo)
    used = set(fixed.values())
    if len(used) > 1:
        return None
    candidates = sorted(used) if used else sorted(avail, key=lambda n: (n != prefer, n))
    for node in candidates:
        if node in avail and _fits(need, avail[node]):
            return {i: node for i in todo}
    return None


def _choose(shape, strategy, avail, placed: dict[int, str]) -> str | None:
    counts: dict[str, int] = {}
    for node in placed.values():
        counts[node] = counts.get(node, 0) + 1
    fitting = [node for node in sorted(avail) if _fits(shape, avail[node])]
    if strategy == "STRICT_SPREAD":
        fitting = [node for node in fitting if node not in counts]
    if not fitting:
        return None
    if strategy == "PACK":  # fullest used node first, then the roomiest fresh one
        return min(fitting, key=lambda n: (-counts.get(n, 0), -avail[n].get("CPU", 0)))
    # SPREAD / STRICT_SPREAD: the least used node, roomiest first
    return min(fitting, key=lambda n: (counts.get(n, 0), -avail[n].get("CPU", 0)))


# -- one node's reservations --------------------------------------------------------------
@dataclasses.dataclass
class Bundle:
    shape: dict[str, float]
    allocation: Allocation
    committed: bool = False


class BundleLedger:
    """The bundles reserved on one node, over its ``NodeResources`` (pure)."""

    def __init__(self, resources: NodeResources):
        self.resources = resources
        self.groups: dict[str, dict[int, Bundle]] = {}

    def prepare(self, pg_hex: str, bundles: list[tuple[int, dict[str, float]]]) -> bool:
        """Take every bundle's resources out of the pool, or none of them."""
        taken: list[tuple[int, Bundle]] = []
        group = self.groups.setdefault(pg_hex, {})
        for index, shape in bundles:
            if index in group:  # a retried prepare of a bundle we hold already
                continue
            alloc = self.resources.allocate(shape)
            if alloc is None:
                for _i, bundle in taken:
                    self.resources.release(bundle.allocation)
                    del group[_i]
                if not group:
                    del self.groups[pg_hex]
                return False
            bundle = Bundle(dict(shape), alloc)
            group[index] = bundle
            taken.append((index, bundle))
        return True

    def commit(self, pg_hex: str) -> bool:
        group = self.groups.get(pg_hex)
        if group is None:
            return False
        for index, bundle in group.items():
            if not bundle.committed:
                bundle.committed = True
                for name, amount in group_resources(bundle.shape, pg_hex, index).items():
                    self.resources.add_resource(name, to_units(amount))
        return True

    def release(self, pg_hex: str, indices=None) -> list[int]:
        """Give bundles back (all of the group's here by default); returns their indices.

        Leases holding the group's resources must be released first."""
        group = self.groups.get(pg_hex)
        if group is None:
            return []
        chosen = [i for i in group if indices is None or i in indices]
        for index in chosen:
            bundle = group.pop(index)
            if bundle.committed:
                for name, amount in group_resources(bundle.shape, pg_hex, index).items():
                    self.resources.remove_resource(name, to_units(amount))
            self.resources.release(bundle.allocation)
        if not group:
            del self.groups[pg_hex]
        return chosen

    def gpu_ids(self, allocation: Allocation) -> list[tuple[int, float]] | None:
        """The GPU instances behind a lease on group GPUs (for CUDA_VISIBLE_DEVICES)."""
        for name in allocation.amounts:
            if not name.startswith("GPU_group_"):
                continue
            pg_hex = group_of(name)
            rest = name[len("GPU_group_"):]
            bundles = self.groups.get(pg_hex, {})
            if rest != pg_hex:  # indexed
                bundle = bundles.get(int(rest.split("_", 1)[0]))
                chosen = [bundle] if bundle else []
            else:
                chosen = list(bundles.values())
            ids = []
            for bundle in chosen:
                ids.extend((idx, units / 10_000) for idx, units in
                           bundle.allocation.instances.get("GPU", []))
            return ids
        return None
