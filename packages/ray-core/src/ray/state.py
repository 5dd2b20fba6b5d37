"""The cluster as tools outside the runtime see it (the autoscaler's monitor, ``ray status``).

``cluster_load()`` connects to the GCS directly (no driver needed) and returns,
for every live node, its total and available resources, plus every raylet's
queued resource demand (lease requests that fit nowhere yet).

``AutoscalerStatus`` is what the monitor publishes after each round
(``report_autoscaler_status``: one JSON record in the GCS KV, replaced each round) and
``ray status`` prints (``get_autoscaler_status``): the nodes it manages (active,
pending with their setup stage, recent failures), the demand it saw and the demand no
node type can hold, and when it was written.
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

from ray._private.driver import _resolve_address
from ray._private.gcs import connect, keys


def cluster_load(address: str | None = None, redis_password: str | None = None,
                 timeout_s: float = 30.0) -> dict:
    gcs = connect(_resolve_address(address or "auto"), redis_password)
    try:
        infos = gcs.hgetall_obj(keys.NODES)
        loads = gcs.hgetall_obj(keys.NODE_LOADS)
    finally:
        gcs.close()
    now, nodes, demand = time.time(), [], []
    for node_id, info in infos.items():
        load = loads.get(node_id)
        if not info.get("alive", True) or not load or now - load.get("time", 0) > timeout_s:
            continue
        nodes.append({"ip": info["node_ip"], "node_id": node_id,
                      "total": dict(load["total"]), "available": dict(load["available"])})
        demand.extend(dict(b) for b in load.get("demand", []))
    return {"nodes": nodes, "demand": demand}


@dataclasses.dataclass(frozen=True)
class AutoscalerNode:
    """A node as the autoscaler sees it: its provider id, node type, IP and setup stage
    (``up-to-date``, ``uninitialized``, ``waiting-for-ssh``, ``syncing-files``,
    ``setting-up``; ``unmanaged`` for a node that reports load but that the provider did
    not launch)."""

    node_id: str
    node_type: str
    ip: str
    status: str


@dataclasses.dataclass(frozen=True)
class AutoscalerFailure:
    """A node the autoscaler gave up on (its setup failed) and terminated."""

    node_type: str
    ip: str
    time_s: float  # wall clock
    reason: str = "update-failed"


@dataclasses.dataclass(frozen=True)
class AutoscalerStatus:
    """One round of the autoscaler, as ``ray status`` shows it."""

    time_s: float  # wall clock of the round
    cluster_name: str
    update_interval_s: float
    active_nodes: tuple[AutoscalerNode, ...] = ()
    pending_nodes: tuple[AutoscalerNode, ...] = ()
    failed_nodes: tuple[AutoscalerFailure, ...] = ()
    pending_demand: tuple[dict, ...] = ()  # resource bundles queued cluster-wide
    infeasible_demand: tuple[dict, ...] = ()  # bundles no node type can hold
    launched: dict = dataclasses.field(default_factory=dict)  # node type -> count, this round

    def to_json(self) -> bytes:
        return json.dumps(dataclasses.asdict(self), sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes | str) -> AutoscalerStatus:
        try:
            raw = json.loads(data)
            return cls(
                time_s=float(raw["time_s"]), cluster_name=str(raw["cluster_name"]),
                update_interval_s=float(raw["update_interval_s"]),
                active_nodes=tuple(AutoscalerNode(**n) for n in raw.get("active_nodes", ())),
                pending_nodes=tuple(AutoscalerNode(**n) for n in raw.get("pending_nodes", ())),
                failed_nodes=tuple(AutoscalerFailure(**f) for f in raw.get("failed_nodes", ())),
                pending_demand=tuple(_bundle(b) for b in raw.get("pending_demand", ())),
                infeasible_demand=tuple(_bundle(b) for b in raw.get("infeasible_demand", ())),
                launched={str(k): int(v) for k, v in raw.get("launched", {}).items()})
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not an autoscaler status record ({type(exc).__name__}: {exc}); "
                             "was it written by a different version of the monitor?") from None


def _bundle(raw: Any) -> dict:
    return {str(k): float(v) for k, v in dict(raw).items()}


def report_autoscaler_status(status: AutoscalerStatus, address: str | None = None,
                             redis_password: str | None = None) -> None:
    """Publish the autoscaler's latest round (replacing the previous one)."""
    if not isinstance(status, AutoscalerStatus):
        raise TypeError(f"report_autoscaler_status takes an AutoscalerStatus, got "
                        f"{type(status).__name__}")
    gcs = connect(_resolve_address(address or "auto"), redis_password)
    try:
        gcs.set(keys.AUTOSCALER_STATUS, status.to_json())
    finally:
        gcs.close()


def get_autoscaler_status(address: str | None = None,
                          redis_password: str | None = None) -> AutoscalerStatus | None:
    """The autoscaler's latest round, or None when no autoscaler has reported."""
    gcs = connect(_resolve_address(address or "auto"), redis_password)
    try:
        return read_autoscaler_status(gcs)
    finally:
        gcs.close()


def read_autoscaler_status(gcs) -> AutoscalerStatus | None:
    """``get_autoscaler_status`` through an open GCS client."""
    raw = gcs.get(keys.AUTOSCALER_STATUS)
    return None if raw is None else AutoscalerStatus.from_json(raw)


__all__ = ["AutoscalerFailure", "AutoscalerNode", "AutoscalerStatus", "cluster_load",
           "get_autoscaler_status", "read_autoscaler_status", "report_autoscaler_status"]
