"""``ray status``: the cluster's nodes, resources in use, pending demand and autoscaler.

Read from the GCS: the node table, each raylet's load report (resources available,
queued lease shapes, pending placement-group bundles) and its latest utilisation
sample (``node_stats``: object store, host memory). With an autoscaler running
(``ray start --head --autoscaling-config``), the node status is the autoscaler's, as
Ray prints it: the record its monitor publishes each round (``ray.state.AutoscalerStatus``:
active nodes by type, pending nodes with their setup stage, recent failures, the demand
no node type can hold), stamped with the round's time; a record older than a few
rounds is flagged (the monitor may have stopped: its log is ``logs/monitor.log``).
"""

from __future__ import annotations

import collections
import datetime
import json
import os

import click

from ray._private import node_stats
from ray._private.gcs import keys
from ray._private.runtime import cluster_info
from ray.scripts.table import human_bytes
from ray.state import AutoscalerStatus, read_autoscaler_status

LOAD_FRESH_S = 30.0
# A status record older than this many monitor rounds (and STALE_MIN_S) is flagged.
STALE_ROUNDS = 3
STALE_MIN_S = 30.0
_RULE = "-" * 63


def _fmt_amount(name: str, used: float, total: float) -> str:
    if name in ("memory", "object_store_memory"):
        return f" {human_bytes(used)}/{human_bytes(total)} {name}"
    return f" {used:g}/{total:g} {name}"


def _demand_lines(loads: dict, alive: set) -> list[str]:
    shapes = collections.Counter()
    for node_id, load in loads.items():
        if node_id not in alive:
            continue
        for shape in load.get("demand") or []:
            if isinstance(shape, dict):
                shapes[json.dumps(dict(sorted(shape.items())))] += 1
    return [f" {dict(json.loads(s))}: {n}+ pending tasks/actors" for s, n in
            shapes.most_common()]


def _autoscaler_node_lines(status: AutoscalerStatus) -> list[str]:
    """Ray's Active / Pending / Recent failures blocks from the monitor's record."""
    active = collections.Counter(n.node_type for n in status.active_nodes)
    out = ["Active:"] + ([f" {count} {node_type}" for node_type, count in sorted(active.items())]
                         or [" (no active nodes)"])
    pending = [f" {n.ip or n.node_id}: {n.node_type}, {n.status.lower()}"
               for n in status.pending_nodes]
    out += ["Pending:"] + (pending or [" (no pending nodes)"])
    failures = [f" {f.node_type}: NodeTerminated (ip: {f.ip}, {f.reason} at "
                f"{datetime.datetime.fromtimestamp(f.time_s):%H:%M:%S})"
                for f in reversed(status.failed_nodes)]
    out += ["Recent failures:"] + (failures or [" (no failures)"])
    return out


def _autoscaler_lines(gcs, head: dict | None, status: AutoscalerStatus | None) -> list[str]:
    if status is not None:
        age_s = datetime.datetime.now().timestamp() - status.time_s
        lines = [f" cluster {status.cluster_name}: last round {age_s:.1f} s ago (every "
                 f"{status.update_interval_s:g} s)"]
        if age_s > max(STALE_MIN_S, STALE_ROUNDS * status.update_interval_s):
            lines.append(" WARNING: the autoscaler has not reported for a while; is its "
                         "monitor running? (see logs/monitor.log on the head)")
        lines += [f" infeasible: {b} fits no node type" for b in status.infeasible_demand]
        return lines
    config = gcs.get(keys.kv("autoscaler", "config_path"))
    if not config:
        return [" (no autoscaler: this cluster's size is fixed)"]
    lines = [f" running with {config.decode(errors='replace')} (no round reported yet)"]
    log = os.path.join((head or {}).get("session_dir") or "", "logs", "monitor.log")
    if os.path.isfile(log):
        with open(log, "rb") as f:
            f.seek(max(0, os.path.getsize(log) - 4096))
            tail = f.read().decode(errors="replace").splitlines()[-5:]
        lines += [" recent decisions:"] + [f"   {line}" for line in tail]
    return lines


def status_text(gcs, verbose: bool = False) -> str:
    nodes = cluster_info.nodes(gcs)
    infos = gcs.hgetall_obj(keys.NODES)
    loads = gcs.hgetall_obj(keys.NODE_LOADS)
    now = datetime.datetime.now()
    alive = [n for n in nodes if n["Alive"]]
    dead = [n for n in nodes if not n["Alive"]]
    try:
        autoscaler = read_autoscaler_status(gcs)
    except ValueError as exc:  # a record this version cannot read: say so, show the rest
        autoscaler, unreadable = None, str(exc)
    else:
        unreadable = ""
    if autoscaler is not None:
        stamp = datetime.datetime.fromtimestamp(autoscaler.time_s)
        out = [f"======== Autoscaler status: {stamp} ========", "Node status", _RULE]
        out += _autoscaler_node_lines(autoscaler)
    else:
        out = [f"======== Cluster status: {now:%Y-%m-%d %H:%M:%S} ========", "Node status",
               _RULE, "Active:"]
        out += [f" 1 node_{n['NodeID'][:16]} ({n['NodeManagerAddress']}"
                + (", head)" if n["IsHead"] else ")") for n in alive] or [" (no active nodes)"]
        out += ["Dead:"] + ([f" 1 node_{n['NodeID'][:16]} ({n['NodeManagerAddress']})"
                             for n in dead] or [" (no dead nodes)"])
    used: dict[str, float] = collections.defaultdict(float)
    total: dict[str, float] = collections.defaultdict(float)
    per_node = []
    for node in alive:
        load = loads.get(node["NodeID"]) or {}
        fresh = load and datetime.datetime.now().timestamp() - load.get("time", 0) < LOAD_FRESH_S
        node_total = dict(load.get("total") or node["Resources"])
        available = dict(load["available"]) if fresh and "available" in load else node_total
        sample = node_stats.latest(gcs, node["NodeID"])
        node_used = {k: max(0.0, v - available.get(k, 0.0)) for k, v in node_total.items()
                     if not _is_group_resource(k)}
        node_total = {k: v for k, v in node_total.items() if not _is_group_resource(k)}
        if sample is not None:
            node_used["object_store_memory"] = sample.object_store_used_bytes
            node_total["object_store_memory"] = sample.object_store_capacity_bytes
        for k, v in node_total.items():
            total[k] += v
            used[k] += node_used.get(k, 0.0)
        per_node.append((node, node_used, node_total, sample))
    out += ["", "Resources", _RULE, "Usage:"]
    order = sorted(total, key=lambda k: (k not in ("CPU", "GPU"), k))
    out += [_fmt_amount(k, used[k], total[k]) for k in order] or [" (no resources)"]
    out += ["", "Demands:"] + (_demand_lines(loads, {n["NodeID"] for n in alive})
                               or [" (no resource demands)"])
    if verbose:
        for node, node_used, node_total, sample in per_node:
            out += ["", f"Node: {node['NodeID']} ({node['NodeManagerAddress']})", " Usage:"]
            out += [_fmt_amount(k, node_used.get(k, 0.0), node_total[k]) for k in
                    sorted(node_total, key=lambda k: (k not in ("CPU", "GPU"), k))]
            if sample is not None:
                out.append(f" Host: {sample.cpu_percent:.0f}% CPU, "
                           f"{human_bytes(sample.mem_used_bytes)}/"
                           f"{human_bytes(sample.mem_total_bytes)} memory")
    head = next((infos.get(n["NodeID"]) for n in alive if n["IsHead"]), None)
    out += ["", "Autoscaler:"] + _autoscaler_lines(gcs, head, autoscaler)
    if unreadable:
        out.append(f" {unreadable}")
    return "\n".join(out) + "\n"


def _is_group_resource(name: str) -> bool:
    """Placement-group bookkeeping resources (``CPU_group_<pg>``, ``bundle_group_...``)."""
    return "_group_" in name


@click.command("status")
@click.option("--address", default="auto", help="The cluster's GCS address (default: the one "
              "on this machine, or $RAY_ADDRESS).")
@click.option("--redis-password", default=None, envvar="RAY_REDIS_PASSWORD")
@click.option("-v", "--verbose", is_flag=True, help="Per-node usage and host load too.")
def status(address, redis_password, verbose):
    """Nodes, resources in use, pending demand and the autoscaler."""
    from ray.scripts.cli import _connect_gcs

    gcs = _connect_gcs(address, redis_password)
    try:
        click.echo(status_text(gcs, verbose), nl=False)
    finally:
        gcs.close()


__all__ = ["status", "status_text"]
