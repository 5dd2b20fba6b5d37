"""Global-state queries over the GCS: nodes, cluster and available resources."""

from __future__ import annotations

import time

from ray._private.gcs import keys
from ray._private.gcs.versioned import VersionedTable


def nodes(gcs) -> list[dict]:
    """One dict per node, with the 0.7 keys and today's."""
    infos = gcs.hgetall_obj(keys.NODES)
    beats = gcs.hgetall(keys.NODE_HEARTBEATS)
    out = []
    for node_id, info in sorted(infos.items(), key=lambda kv: kv[1].get("start_time", 0)):
        alive = bool(info.get("alive", True))
        out.append({
            "NodeID": node_id,
            "ClientID": node_id,
            "Alive": alive,
            "IsInsertion": alive,
            "EntryType": 0 if alive else 1,
            "NodeManagerAddress": info["node_ip"],
            "NodeManagerHostname": info["node_ip"],
            "NodeManagerPort": info.get("raylet_port"),
            "ObjectManagerPort": info.get("object_manager_port"),
            "ObjectStoreSocketName": info.get("plasma_socket"),
            "RayletSocketName": info.get("raylet_socket"),
            "Resources": dict(info.get("resources", {})),
            "alive": alive,
            "LastHeartbeat": float(beats.get(node_id, b"0") or 0),
            "IsHead": info.get("is_head", False),
        })
    return out


def _live_loads(gcs, timeout_s: float):
    infos = gcs.hgetall_obj(keys.NODES)
    loads = gcs.hgetall_obj(keys.NODE_LOADS)
    now = time.time()
    for node_id, info in infos.items():
        if not info.get("alive", True):
            continue
        load = loads.get(node_id)
        yield node_id, info, load if load and now - load.get("time", 0) <= timeout_s else None


def cluster_resources(gcs, node_table: VersionedTable | None = None) -> dict[str, float]:
    """What the live nodes have in all, from the node table alone (the load records
    ``available_resources`` also reads do not change the totals): read through
    ``node_table`` when given, which costs one GET while no node joined or left."""
    infos = (gcs.hgetall_obj(keys.NODES) if node_table is None
             else node_table.read(gcs, time.monotonic()))
    total: dict[str, float] = {}
    for info in infos.values():
        if not info.get("alive", True):
            continue
        for k, v in info.get("resources", {}).items():
            total[k] = total.get(k, 0) + v
    return total


def available_resources(gcs, timeout_s: float = 30.0, *,
                        local: tuple[str, dict[str, float]] | None = None) -> dict[str, float]:
    """What the nodes have free, from their last heartbeats; ``local``: (node id hex,
    what its raylet has free now), which replaces that node's heartbeat (up to a heartbeat
    period stale: a task that just started would still see its own resources free)."""
    avail: dict[str, float] = {}
    for node_id, info, load in _live_loads(gcs, timeout_s):
        if local is not None and node_id == local[0]:
            source = local[1]
        else:
            source = load["available"] if load else info.get("resources", {})
        for k, v in source.items():
            if v > 0:
                avail[k] = avail.get(k, 0) + v
    return avail
