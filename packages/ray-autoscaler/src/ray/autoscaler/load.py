"""Where the monitor learns what the cluster is doing: a ``LoadSource``.

A load source is any zero-argument callable returning a :class:`ClusterLoad`: per
node (keyed by IP) the total and available resources, plus the resource bundles
queued because no node had room. The monitor never talks to the GCS itself.

    gcs_load_source(address)  reads ray-core's ``ray.state.cluster_load()``
    file_load_source(path)    reads the same JSON from a file (tests, other schedulers)

JSON form (also what ``ray.state.cluster_load()`` is asked to return)::

    {"nodes": [{"ip": "10.0.0.2", "total": {"CPU": 2}, "available": {"CPU": 1}}],
     "demand": [{"CPU": 1}, {"CPU": 1, "GPU": 1}]}
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from collections.abc import Callable, Mapping
from typing import Any

ResourceDict = Mapping[str, float]


@dataclasses.dataclass(frozen=True)
class NodeLoad:
    ip: str
    total: ResourceDict
    available: ResourceDict

    @property
    def busy(self) -> bool:
        return any(self.available.get(k, 0.0) < v for k, v in self.total.items())


@dataclasses.dataclass(frozen=True)
class ClusterLoad:
    nodes: tuple[NodeLoad, ...] = ()
    demand: tuple[ResourceDict, ...] = ()

    def by_ip(self) -> dict[str, NodeLoad]:
        return {n.ip: n for n in self.nodes}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClusterLoad:
        nodes = tuple(
            NodeLoad(
                ip=n["ip"],
                total={k: float(v) for k, v in n.get("total", {}).items()},
                available={k: float(v) for k, v in n.get("available", n.get("total", {})).items()},
            )
            for n in data.get("nodes", ())
        )
        demand = tuple({k: float(v) for k, v in b.items()} for b in data.get("demand", ()))
        return cls(nodes=nodes, demand=demand)


LoadSource = Callable[[], ClusterLoad]


def file_load_source(path: str) -> LoadSource:
    """Reads ClusterLoad JSON from ``path`` on every call; a missing file is an empty load."""

    def read() -> ClusterLoad:
        try:
            with open(path) as f:
                return ClusterLoad.from_dict(json.load(f))
        except FileNotFoundError:
            return ClusterLoad()

    return read


def gcs_load_source(address: str | None = None) -> LoadSource:
    """Reads load from ray-core through the public ``ray.state.cluster_load`` helper."""
    try:
        state = importlib.import_module("ray.state")
    except ImportError:
        state = None
    if state is None or not hasattr(state, "cluster_load"):
        raise RuntimeError(
            "this ray-core does not publish cluster load yet (ray.state.cluster_load): "
            "run the monitor with --load-file PATH, or upgrade ray-core"
        )

    def read() -> ClusterLoad:
        return ClusterLoad.from_dict(state.cluster_load(address))

    return read
