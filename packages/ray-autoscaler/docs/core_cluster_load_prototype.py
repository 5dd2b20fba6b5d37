"""Proposed ``ray/state.py`` for ray-core: the public helper the autoscaler's monitor reads.

Not imported by anything here (libraries may not touch ``ray._private``). It was
tested by putting it on PYTHONPATH as ``ray/state.py`` (``ray`` extends its
``__path__``): ``PYTHONPATH=<dir> pytest -k scales_up_for_queued`` in
test_autoscaler_multinode.py then passes against real ``ray start`` clusters.
"""

from __future__ import annotations

import time

from ray._private.driver import _resolve_address
from ray._private.gcs import connect, keys


def cluster_load(
    address: str | None = None, redis_password: str | None = None, timeout_s: float = 30.0
) -> dict:
    """Per live node its total/available resources, plus every raylet's queued demand."""
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
        nodes.append(
            {
                "ip": info["node_ip"],
                "total": dict(load["total"]),
                "available": dict(load["available"]),
            }
        )
        demand.extend(dict(b) for b in load.get("demand", []))
    return {"nodes": nodes, "demand": demand}
