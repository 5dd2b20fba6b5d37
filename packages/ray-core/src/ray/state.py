"""Cluster load for tools outside the runtime (the autoscaler's monitor).

``cluster_load()`` connects to the GCS directly (no driver needed) and returns,
for every live node, its total and available resources, plus every raylet's
queued resource demand (lease requests that fit nowhere yet).
"""

from __future__ import annotations

import time

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


__all__ = ["cluster_load"]
