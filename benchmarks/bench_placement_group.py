"""Placement-group latencies and in-group task throughput on a 2-node local cluster;
prints JSON. Uses only the public Ray 2.x API, so it also runs against Ray itself.

    .venv/bin/python benchmarks/bench_placement_group.py [--rounds 10]

* ``create_ready_ms``: ``placement_group([{"CPU": 1}] * 2, "STRICT_SPREAD")`` until
  ``ray.get(pg.ready())`` returns (median of rounds);
* ``first_tasks_ms``: then one task in each bundle (one of them on the other node),
  submitted and gathered (median; includes starting a worker where none is idle);
* ``remove_ms``: ``remove_placement_group``;
* ``tasks_per_s_in_group`` vs ``tasks_per_s_plain``: 2000 no-op tasks, pipelined, each
  asking for 1 CPU and 1 ``slot`` (a resource only the head has, 2 of them; the group's
  bundle reserves 2 CPUs and both slots), so both runs have the same two workers'
  capacity. Median of 6 alternating runs, taken once the driver has settled (its
  object-store pre-fault thread competes for the CPU in the first seconds).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import ray
from ray.cluster_utils import Cluster
from ray.util.placement_group import placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy


@ray.remote(num_cpus=1)
def where():
    return ray.get_runtime_context().get_node_id()


@ray.remote(num_cpus=1, resources={"slot": 1})
def noop():
    return None


def _throughput(fn, n=2000) -> float:
    ray.get([fn.remote() for _ in range(200)])  # warm the leases
    start = time.perf_counter()
    ray.get([fn.remote() for _ in range(n)])
    return n / (time.perf_counter() - start)


def _settle(max_s: float = 15.0) -> float:
    """Wait until this process uses under 0.1 core over 0.5 s; returns the seconds waited."""
    import psutil

    me, start = psutil.Process(), time.perf_counter()
    me.cpu_percent()
    while time.perf_counter() - start < max_s:
        time.sleep(0.5)
        if me.cpu_percent() < 10:
            break
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    cluster = Cluster()
    cluster.add_node(num_cpus=4, resources={"slot": 2})
    cluster.add_node(num_cpus=2)
    ray.init(address=cluster.address)
    try:
        ray.get(where.remote())
        settle_s = _settle()
        create, first, remove = [], [], []
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            pg = placement_group([{"CPU": 1}, {"CPU": 1}], strategy="STRICT_SPREAD")
            ray.get(pg.ready())
            t1 = time.perf_counter()
            ray.get([where.options(scheduling_strategy=PlacementGroupSchedulingStrategy(
                pg, i)).remote() for i in range(2)])
            t2 = time.perf_counter()
            remove_placement_group(pg)
            t3 = time.perf_counter()
            create.append((t1 - t0) * 1e3)
            first.append((t2 - t1) * 1e3)
            remove.append((t3 - t2) * 1e3)
            time.sleep(0.1)
        grouped, plain = [], []
        for i in range(6):
            for what in (("group", "plain") if i % 2 == 0 else ("plain", "group")):
                if what == "plain":
                    plain.append(_throughput(noop))
                    continue
                # (waits for the plain run's idle leases to give the slots back)
                pg = placement_group([{"CPU": 2, "slot": 2}], strategy="PACK")
                ray.get(pg.ready())
                grouped.append(_throughput(noop.options(
                    scheduling_strategy=PlacementGroupSchedulingStrategy(pg, 0))))
                remove_placement_group(pg)
        results = {
            "rounds": args.rounds,
            "settle_s": round(settle_s, 2),
            "create_ready_ms": round(statistics.median(create), 2),
            "first_tasks_ms": round(statistics.median(first), 2),
            "remove_ms": round(statistics.median(remove), 2),
            "tasks_per_s_in_group": round(statistics.median(grouped)),
            "tasks_per_s_plain": round(statistics.median(plain)),
            "tasks_per_s_in_group_runs": [round(x) for x in grouped],
            "tasks_per_s_plain_runs": [round(x) for x in plain],
        }
    finally:
        ray.shutdown()
        cluster.shutdown()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
