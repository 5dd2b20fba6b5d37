"""Many raylets on one machine (issue #29): what the head pays per node and per task.

    .venv/bin/python benchmarks/bench_many_nodes.py [--nodes 100] [--tasks 1000]

Starts a ``ray.cluster_utils.Cluster`` of ``--nodes`` nodes (the head included), each
with 1 CPU and a small object store, connects, and prints one JSON object:

* ``join_s``: from the first ``add_node`` until ``ray.nodes()`` lists all of them alive
  (nodes are started one after another, as ``Cluster.add_node`` does);
* ``idle_cpu`` / ``busy_cpu``: CPU seconds per second of the head raylet, the GCS
  (valkey) and all raylets together, over ``--idle-s`` with nothing running (only
  heartbeats) and during the task rounds below (``psutil`` on their pids);
* ``nodes_ms`` / ``cluster_resources_ms``: latency of ``ray.nodes()`` and
  ``ray.cluster_resources()`` (median of 20);
* ``tasks``: ``--tasks`` tasks that each sleep 50 ms, submitted at once and gathered:
  wall time and how many distinct nodes ran them, for a first round (workers
  prestarted but no leases held) and a second one (the goal: under 2 s, ideally
  ``tasks * 0.05 / nodes``, with every node running some);
* ``actors``: one actor pinned to every node (``NodeAffinitySchedulingStrategy``):
  seconds to create them all and to ping them all; the actors are killed after;
* ``remove``: 10 worker nodes removed at once (in parallel threads), then the time
  until ``ray.nodes()`` shows them dead and until ``--tasks`` tasks submitted after the
  removal have all finished (and on how many nodes).

Everything the benchmark started is stopped at the end (``cluster.shutdown()``); any
child process still alive after it is reported (``leftover_processes``) and killed.
Uses only the public API, so it also runs against Ray itself.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time

import psutil

import ray
from ray.cluster_utils import Cluster
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

SLEEP_S = 0.05


@ray.remote(num_cpus=1)
def sleep_where():
    time.sleep(SLEEP_S)
    return ray.get_runtime_context().get_node_id()


@ray.remote(num_cpus=0)
class Pinger:
    def ping(self):
        return ray.get_runtime_context().get_node_id()


def _gcs_pids() -> list[int]:
    """The GCS server(s) the cluster started: our valkey/redis children."""
    return [p.pid for p in psutil.Process().children(recursive=True)
            if any(name in p.name() for name in ("valkey", "redis", "gcs_server"))]


def _raylet_pid(node) -> int:
    """The raylet process of a ``Cluster`` node: this project's nodes name it, Ray's
    keep it in their process table."""
    pid = getattr(node, "raylet_pid", None)
    return node.all_processes["raylet"][0].process.pid if pid is None else pid


class CpuMeter:
    """CPU seconds of a set of processes over a window, per second of wall time."""

    def __init__(self, groups: dict[str, list[int]]):
        self._procs = {name: [psutil.Process(pid) for pid in pids]
                       for name, pids in groups.items()}

    def _cpu(self) -> dict[str, float]:
        out = {}
        for name, procs in self._procs.items():
            total = 0.0
            for p in procs:
                try:
                    t = p.cpu_times()
                    total += t.user + t.system
                except psutil.Error:
                    pass
            out[name] = total
        return out

    def __enter__(self):
        self._start = self._cpu()
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        wall = time.perf_counter() - self._t0
        end = self._cpu()
        self.per_s = {name: round((end[name] - self._start[name]) / wall, 3)
                      for name in end}
        self.per_s["wall_s"] = round(wall, 2)


def _median_ms(fn, n: int = 20) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return round(statistics.median(times) * 1000, 2)


def _task_round(n: int) -> dict:
    t0 = time.perf_counter()
    where = ray.get([sleep_where.remote() for _ in range(n)])
    return {"wall_s": round(time.perf_counter() - t0, 3), "distinct_nodes": len(set(where))}


def _alive_ids() -> set[str]:
    return {n["NodeID"] for n in ray.nodes() if n["Alive"]}


def _start(cluster: Cluster, nodes: int, node_args: dict) -> float:
    t0 = time.perf_counter()
    for _ in range(nodes):
        cluster.add_node(wait=False, **node_args)
    cluster.wait_for_nodes(timeout=120 + 5 * nodes)
    return time.perf_counter() - t0


def _actors(node_ids: list[str]) -> dict:
    t0 = time.perf_counter()
    actors = [Pinger.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
        node_id, soft=False)).remote() for node_id in node_ids]
    ray.get([a.ping.remote() for a in actors])  # the first call waits for the actor
    created_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    where = ray.get([a.ping.remote() for a in actors])
    ping_s = time.perf_counter() - t0
    for a in actors:
        ray.kill(a)
    return {"create_s": round(created_s, 3), "ping_all_ms": round(ping_s * 1000, 1),
            "on_right_node": sum(w == n for w, n in zip(where, node_ids))}


def _remove(cluster: Cluster, count: int, tasks: int) -> dict:
    # Not the node this driver is attached to (Ray refuses to remove it).
    mine = ray.get_runtime_context().get_node_id()
    victims = [n for n in cluster.worker_nodes if n.node_id != mine][-count:]
    gone = {n.node_id for n in victims}
    t0 = time.perf_counter()
    threads = [threading.Thread(target=cluster.remove_node, args=(n,)) for n in victims]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    removed_s = time.perf_counter() - t0
    while _alive_ids() & gone:
        time.sleep(0.05)
    dead_s = time.perf_counter() - t0
    after = _task_round(tasks)
    return {"removed": count, "remove_s": round(removed_s, 3),
            "shown_dead_s": round(dead_s, 3), "tasks_after": after,
            "alive_nodes": len(_alive_ids())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--object-store-mb", type=int, default=64)
    parser.add_argument("--idle-s", type=float, default=5.0)
    parser.add_argument("--remove", type=int, default=10)
    # No pre-faulting: 100 stores would otherwise touch nodes * object_store_mb at once.
    # (Ray's GCS refuses keys it does not know: run it with --system-config '{}'.)
    parser.add_argument("--system-config", default='{"object_store_prefault_bytes": 0}',
                        help="each node's _system_config, as JSON")
    args = parser.parse_args()

    system_config = json.loads(args.system_config)
    node_args = {"num_cpus": 1, "object_store_memory": args.object_store_mb * 1024**2,
                 "_system_config": system_config}
    result: dict = {"nodes": args.nodes, "tasks": args.tasks,
                    "object_store_mb": args.object_store_mb}
    cluster = Cluster()
    try:
        result["join_s"] = round(_start(cluster, args.nodes, node_args), 2)
        cluster.connect()
        t0 = time.perf_counter()
        while len(_alive_ids()) < args.nodes:  # the driver's view too
            time.sleep(0.05)
        result["driver_sees_all_s"] = round(time.perf_counter() - t0, 2)
        head = _raylet_pid(cluster.head_node)
        raylets = [_raylet_pid(n) for n in cluster.list_all_nodes()]
        groups = {"head_raylet": [head], "gcs": _gcs_pids(), "all_raylets": raylets}
        time.sleep(2.0)  # start-up work (zygotes, prestarted workers) settles
        with CpuMeter(groups) as idle:
            time.sleep(args.idle_s)
        result["idle_cpu"] = idle.per_s
        result["nodes_ms"] = _median_ms(ray.nodes)
        result["cluster_resources_ms"] = _median_ms(ray.cluster_resources)
        result["cluster_cpus"] = ray.cluster_resources().get("CPU")
        with CpuMeter(groups) as busy:
            result["tasks_first"] = _task_round(args.tasks)
            result["tasks_second"] = _task_round(args.tasks)
        result["busy_cpu"] = busy.per_s
        result["actors"] = _actors(sorted(_alive_ids()))
        if args.remove:
            result["remove"] = _remove(cluster, min(args.remove, args.nodes - 1), args.tasks)
    finally:
        ray.shutdown()  # (Ray refuses to remove the node a driver is attached to)
        cluster.shutdown()
        leftovers = psutil.Process().children(recursive=True)
        result["leftover_processes"] = len(leftovers)
        for p in leftovers:
            try:
                p.kill()
            except psutil.Error:
                pass
    json.dump(result, sys.stdout)
    print()


if __name__ == "__main__":
    main()
