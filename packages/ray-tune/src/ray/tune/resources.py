"""Per-trial resource requests (`resources_per_trial`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ray.tune.error import TuneError

_KNOWN_KEYS = ("cpu", "gpu", "extra_cpu", "extra_gpu", "memory", "object_store_memory")


@dataclass(frozen=True)
class Resources:
    """CPUs/GPUs for the trial's actor, plus `extra_*` slots for what the trainable launches."""

    cpu: float = 1
    gpu: float = 0
    extra_cpu: float = 0
    extra_gpu: float = 0
    custom_resources: dict = field(default_factory=dict)
    extra_custom_resources: dict = field(default_factory=dict)
    # From a PlacementGroupFactory: the trial runs in a placement group of these bundles
    # (bundle 0 = cpu/gpu/custom_resources above, the rest = the extra_* amounts).
    bundles: tuple = ()
    strategy: str = "PACK"

    def __post_init__(self):
        object.__setattr__(self, "bundles", tuple(dict(b) for b in self.bundles))
        for name in ("cpu", "gpu", "extra_cpu", "extra_gpu"):
            if getattr(self, name) < 0:
                raise TuneError(f"resources_per_trial: {name} must be >= 0")

    def cpu_total(self) -> float:
        return self.cpu + self.extra_cpu

    def gpu_total(self) -> float:
        return self.gpu + self.extra_gpu

    def custom_total(self) -> dict:
        out = dict(self.custom_resources)
        for key, value in self.extra_custom_resources.items():
            out[key] = out.get(key, 0) + value
        return out

    def key(self) -> tuple:
        """Actors are reusable between trials with equal keys."""
        return (
            self.cpu,
            self.gpu,
            self.extra_cpu,
            self.extra_gpu,
            tuple(sorted(self.custom_resources.items())),
            tuple(sorted(self.extra_custom_resources.items())),
            tuple(tuple(sorted(b.items())) for b in self.bundles),
            self.strategy,
        )

    def summary_string(self) -> str:
        text = f"{self.cpu_total():g} CPUs, {self.gpu_total():g} GPUs"
        custom = self.custom_total()
        if custom:
            text += ", " + ", ".join(f"{v:g} {k}" for k, v in sorted(custom.items()))
        return text

    def to_json(self) -> dict:
        return {
            "cpu": self.cpu,
            "gpu": self.gpu,
            "extra_cpu": self.extra_cpu,
            "extra_gpu": self.extra_gpu,
            "custom_resources": self.custom_resources,
            "extra_custom_resources": self.extra_custom_resources,
            "bundles": [dict(b) for b in self.bundles],
            "strategy": self.strategy,
        }

    @classmethod
    def from_json(cls, data: dict) -> Resources:
        return cls(**data)


def resources_from_spec(spec: dict | Resources | None, config: dict | None = None) -> Resources | None:
    """Builds Resources from `{"cpu": 1, "gpu": 0.5, "extra_cpu": ..., "custom": ...}`.

    Values may be callables of the resolved spec (`lambda spec: spec.config.num_workers`).
    """
    if spec is None:
        return None
    if isinstance(spec, Resources):
        return spec
    from ray.tune.execution.placement_groups import PlacementGroupFactory

    if isinstance(spec, PlacementGroupFactory):
        return _from_factory(spec)
    if not isinstance(spec, dict):
        raise TuneError(f"resources_per_trial must be a dict, got {spec!r}")
    values: dict[str, Any] = {}
    custom = {}
    extra_custom = {}
    for key, value in spec.items():
        if callable(value):
            from ray.tune.suggest.variant_generator import _UnresolvedAccessGuard

            value = value(_UnresolvedAccessGuard({"config": config or {}}))
        if key.lower() in ("cpu", "gpu", "extra_cpu", "extra_gpu"):
            values[key.lower()] = value
        elif key in ("memory", "object_store_memory"):
            continue
        elif key.startswith("extra_"):
            extra_custom[key[len("extra_") :]] = value
        else:
            custom[key] = value
    return Resources(**values, custom_resources=custom, extra_custom_resources=extra_custom)


def _from_factory(factory) -> Resources:
    head, rest = factory.bundles[0], factory.bundles[1:]
    extra: dict[str, float] = {}
    for bundle in rest:
        for k, v in bundle.items():
            extra[k] = extra.get(k, 0) + v
    return Resources(
        cpu=head.get("CPU", 0), gpu=head.get("GPU", 0),
        extra_cpu=extra.pop("CPU", 0), extra_gpu=extra.pop("GPU", 0),
        custom_resources={k: v for k, v in head.items() if k not in ("CPU", "GPU")},
        extra_custom_resources=extra, bundles=tuple(factory.bundles), strategy=factory.strategy,
    )
