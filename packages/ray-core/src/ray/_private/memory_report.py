"""What ``ray memory`` prints: the live references table and the object-store stats.

Every raylet puts a ``StoreStats`` (its store's use and its spill/restore totals) into its
load record at each heartbeat (``ray:node_loads``); ``cluster_store_stats`` reads the live
nodes' and ``store_stats_summary`` prints their sum as Ray's ``ray memory --stats-only``
does ("--- Aggregate object store stats across all nodes ---", "Spilled ... MiB, ...
objects, avg write throughput ...", "Restored ...").
"""

from __future__ import annotations

from ray._private.gcs import keys
from ray._private.messages import StoreStats

MIB = 1024 * 1024


def cluster_store_stats(gcs) -> StoreStats:
    """The sum of the live nodes' latest ``StoreStats`` (from their load records)."""
    nodes = gcs.hgetall_obj(keys.NODES)
    total = StoreStats()
    for node_id, load in gcs.hgetall_obj(keys.NODE_LOADS).items():
        if not nodes.get(node_id, {}).get("alive", False) or "store" not in load:
            continue
        try:
            total = total + StoreStats.from_wire(load["store"])
        except ValueError:  # a node of another version: left out of the sum
            continue
    return total


def store_stats_summary(stats: StoreStats) -> str:
    """Ray's ``ray memory --stats-only`` text for ``stats``."""
    capacity = stats.capacity_bytes or 1
    lines = ["--- Aggregate object store stats across all nodes ---",
             f"Plasma memory usage {stats.used_bytes // MIB} MiB, {stats.num_objects} objects, "
             f"{round(100 * stats.used_bytes / capacity, 2)}% full, "
             f"{round(100 * stats.primary_bytes / capacity, 2)}% needed"]
    if stats.spilled_objects:
        lines.append(f"Spilled {stats.spilled_bytes // MIB} MiB, {stats.spilled_objects} objects, "
                     f"avg write throughput {_rate_mib(stats.spilled_bytes, stats.spill_time_s)} "
                     "MiB/s")
    if stats.restored_objects:
        lines.append(f"Restored {stats.restored_bytes // MIB} MiB, {stats.restored_objects} "
                     f"objects, avg read throughput "
                     f"{_rate_mib(stats.restored_bytes, stats.restore_time_s)} MiB/s")
    return "\n".join(lines) + "\n"


def _rate_mib(num_bytes: int, seconds: float) -> int:
    return int(num_bytes / MIB / seconds) if seconds > 0 else 0


# -- the references table -----------------------------------------------------------------
SORT_KEYS = {
    "size": lambda r: -(r["size_bytes"] or 0),
    "owner": lambda r: r["owner"],
    "type": lambda r: r["reference_type"],
    "pid": lambda r: (r["node_ip"], r["pid"]),
}


def fmt_bytes(n) -> str:
    if n is None:
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def references_table(rows: list[dict]) -> str:
    """``ray memory``'s table of live references (rows of ``state.memory_table``)."""
    header = ("OBJECT ID", "SIZE", "REFERENCE TYPE", "OWNER", "HELD BY", "LOCATION")
    table = [header]
    for r in rows:
        held = f"{r['mode']} pid={r['pid']} {r['node_ip']}"
        if r["reference_type"] == "NOT_REPORTED":
            table.append((f"({r['local_refs']} more not listed)", "", "", "", held, ""))
            continue
        table.append((r["object_id"], fmt_bytes(r["size_bytes"]), r["reference_type"],
                      r["owner"], held, r["location"]))
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
             for row in table]
    owned = {r["object_id"]: r["size_bytes"] or 0 for r in rows
             if r.get("owned") and r["object_id"]}
    processes = {(r["node_ip"], r["pid"]) for r in rows}
    lines.append(f"\n{len(rows)} references in {len(processes)} processes; "
                 f"{len(owned)} distinct owned objects, {fmt_bytes(sum(owned.values()))} in total")
    return "\n".join(lines)


def memory_report(gcs, *, stats_only: bool = False, sort_by: str = "size",
                  num_entries: int | None = None, timeout_s: float = 2.0) -> str:
    """``ray memory``: the references table (unless ``stats_only``), then the stats."""
    from ray._private import state

    parts = []
    if not stats_only:
        rows = state.memory_table(gcs, timeout_s=timeout_s)
        rows.sort(key=SORT_KEYS[sort_by])
        if num_entries is not None:
            rows = rows[:num_entries]
        parts.append(references_table(rows) + "\n")
    parts.append(store_stats_summary(cluster_store_stats(gcs)))
    return "\n".join(parts)


__all__ = ["SORT_KEYS", "StoreStats", "cluster_store_stats", "fmt_bytes", "memory_report",
           "references_table", "store_stats_summary"]
