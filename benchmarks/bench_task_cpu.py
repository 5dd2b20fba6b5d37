"""CPU the whole cluster spends per no-op task and actor call (driver, raylet, workers;
Redis excluded), with the I/O threads' idle spin turned off so CPU time is work, not
waiting. Less sensitive to a loaded machine than throughput: compare two trees (or
two settings) run back to back.

    python benchmarks/bench_task_cpu.py [--no-task-events]      # JSON, microseconds

Uses ``_system_config`` keys of this project (``io_spin_us``, ``task_events_enabled``).
"""

from __future__ import annotations

import argparse
import json
import os
import time

import psutil

import ray


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--no-task-events", action="store_true")
    p.add_argument("--tasks", type=int, default=20000)
    args = p.parse_args()
    config = {"io_spin_us": 0}
    if args.no_task_events:
        config["task_events_enabled"] = False
    ray.init(num_cpus=2, _system_config=config)
    try:
        @ray.remote
        def noop():
            return None

        @ray.remote
        class Actor:
            def f(self):
                return None

        actor = Actor.remote()
        ray.get([noop.remote() for _ in range(2000)])
        ray.get(actor.f.remote())
        time.sleep(4)  # past start-up work (the store's pre-fault)
        me = psutil.Process()

        def cluster_cpu_s() -> float:
            total = sum(me.cpu_times()[:2])
            for child in me.children(recursive=True):
                try:
                    if any(s in " ".join(child.cmdline()) for s in ("valkey", "redis")):
                        continue
                    total += sum(child.cpu_times()[:2])
                except psutil.Error:
                    continue  # exited meanwhile
            return total

        def best_us(fn, n: int, repeat: int = 3) -> float:
            runs = []
            for _ in range(repeat):
                start = cluster_cpu_s()
                fn(n)
                runs.append((cluster_cpu_s() - start) / n * 1e6)
            return round(min(runs), 1)

        n = args.tasks
        print(json.dumps({
            "async_task_cpu_us": best_us(lambda k: ray.get([noop.remote() for _ in range(k)]), n),
            "actor_call_async_cpu_us": best_us(
                lambda k: ray.get([actor.f.remote() for _ in range(k)]), n),
            "sync_task_cpu_us": best_us(lambda k: [ray.get(noop.remote()) for _ in range(k)],
                                        n // 6),
            "loadavg_1m": round(os.getloadavg()[0], 1),
        }))
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
