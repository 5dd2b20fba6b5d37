"""What each training replica asks the cluster for."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["Resources"]


@dataclasses.dataclass(frozen=True)
class Resources:
    """Resources of one replica actor (Ray 0.7: ``Resources(num_gpus=1)``).

    ``num_cpus`` also sets the replica's torch thread count.
    """

    num_cpus: float = 1
    num_gpus: float = 0
    resources: Mapping[str, float] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        if self.num_cpus < 0 or self.num_gpus < 0:
            raise ValueError(f"Resources must be non-negative, got {self}")
        object.__setattr__(self, "resources", MappingProxyType(dict(self.resources)))

    def __reduce__(self):
        return (type(self), (self.num_cpus, self.num_gpus, dict(self.resources)))

    def actor_options(self) -> dict:
        """Keyword arguments for ``ray.remote``/``.options``."""
        options: dict = {"num_cpus": self.num_cpus, "num_gpus": self.num_gpus}
        if self.resources:
            options["resources"] = dict(self.resources)
        return options
