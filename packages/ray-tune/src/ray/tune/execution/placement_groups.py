"""``PlacementGroupFactory``: a trial's resources as placement-group bundles.

``resources_per_trial=tune.PlacementGroupFactory([{"CPU": 1}, {"CPU": 2}])`` (or
``tune.with_resources(trainable, factory)``): each trial gets its own placement
group; the trainable actor runs in bundle 0 with that bundle's resources, and
tasks and actors the trainable starts without a strategy of their own go into the
group (``placement_group_capture_child_tasks``), so the other bundles are theirs.
Tune counts the sum of all bundles against the cluster.
"""

from __future__ import annotations

from ray.tune.error import TuneError

_STRATEGIES = ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD")


class PlacementGroupFactory:
    def __init__(self, bundles: list[dict], strategy: str = "PACK", **kwargs):
        if not isinstance(bundles, list | tuple) or not bundles:
            raise TuneError(f"PlacementGroupFactory needs a non-empty list of bundles such as "
                            f"[{{'CPU': 1}}, {{'CPU': 2}}], got {bundles!r}")
        if strategy not in _STRATEGIES:
            raise TuneError(f"PlacementGroupFactory: unknown strategy {strategy!r}; use one of "
                            f"{', '.join(_STRATEGIES)}")
        clean = []
        for i, bundle in enumerate(bundles):
            if not isinstance(bundle, dict):
                raise TuneError(f"PlacementGroupFactory: bundle {i} must be a dict, got {bundle!r}")
            for name, amount in bundle.items():
                if isinstance(amount, bool) or not isinstance(amount, int | float) or amount < 0:
                    raise TuneError(f"PlacementGroupFactory: bundle {i}: {name!r} must be a "
                                    f"number >= 0, got {amount!r}")
            clean.append({_canonical(k): v for k, v in bundle.items() if v})
        # Bundle 0 is the trainable's; an empty one (Ray allows it) just holds a marker.
        if not clean[0]:
            clean[0] = {"CPU": 0.01}
        if any(not b for b in clean[1:]):
            raise TuneError("PlacementGroupFactory: only the first bundle may be empty")
        unknown = set(kwargs) - {"name", "lifetime", "_soft_target_node_id"}
        if unknown:
            raise TuneError(f"PlacementGroupFactory got unknown arguments {sorted(unknown)}; "
                            "it takes bundles, strategy and placement_group's name, lifetime, "
                            "_soft_target_node_id")
        self.bundles = clean
        self.strategy = strategy
        self._kwargs = kwargs  # passed on to placement_group (e.g. lifetime=)

    @property
    def head_bundle(self) -> dict:
        return dict(self.bundles[0])

    @property
    def required_resources(self) -> dict:
        """The sum over all bundles (what Tune reserves for the trial)."""
        total: dict[str, float] = {}
        for bundle in self.bundles:
            for k, v in bundle.items():
                total[k] = total.get(k, 0) + v
        return total

    def __call__(self):
        """Create the placement group (as Ray's factory does)."""
        from ray.util.placement_group import placement_group

        return placement_group(self.bundles, strategy=self.strategy, **self._kwargs)

    def __eq__(self, other):
        return (isinstance(other, PlacementGroupFactory) and other.bundles == self.bundles
                and other.strategy == self.strategy)

    def __hash__(self):
        return hash((tuple(tuple(sorted(b.items())) for b in self.bundles), self.strategy))

    def __repr__(self):
        return f"PlacementGroupFactory({self.bundles}, strategy={self.strategy!r})"


def _canonical(name: str) -> str:
    return name.upper() if name.upper() in ("CPU", "GPU") else name
