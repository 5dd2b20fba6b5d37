"""The cyclic collector's time on the driver during a burst of tasks in flight; prints JSON.

    .venv/bin/python benchmarks/bench_gc_burst.py [--tasks 20000] [--rounds 3] [--no-freeze]

Times every collection with ``gc.callbacks`` while ``--tasks`` no-op tasks are submitted
and then fetched, and reports per round: tasks/s, collector microseconds per task, and
the count and mean milliseconds of collections of each generation. ``--no-freeze`` runs
with ``gc_freeze_startup_heap`` off (this project's start-up heap freeze, see
``ray._private.gc_tuning``); runs unchanged against Ray 2.x without that flag.
"""

from __future__ import annotations

import argparse
import gc
import json
import time


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--tasks", type=int, default=20000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--no-freeze", action="store_true")
    args = p.parse_args()
    import ray

    kwargs = {"_system_config": {"gc_freeze_startup_heap": False}} if args.no_freeze else {}
    ray.init(num_cpus=2, **kwargs)

    @ray.remote
    def noop():
        return None

    ray.get([noop.remote() for _ in range(3000)])
    time.sleep(2.0)
    started: list[float] = []
    by_gen: dict[int, list[float]] = {}

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            started.append(time.perf_counter())
        elif started:
            by_gen.setdefault(info["generation"], []).append(time.perf_counter() - started.pop())

    gc.callbacks.append(on_gc)
    rounds = []
    try:
        for _ in range(args.rounds):
            by_gen.clear()
            t0 = time.perf_counter()
            ray.get([noop.remote() for _ in range(args.tasks)])
            dt = time.perf_counter() - t0
            total = sum(sum(v) for v in by_gen.values())
            rounds.append({
                "tasks_per_s": round(args.tasks / dt),
                "gc_us_per_task": round(total / args.tasks * 1e6, 2),
                "collections": {str(g): {"count": len(v), "mean_ms": round(sum(v) / len(v) * 1e3, 2)}
                                for g, v in sorted(by_gen.items())},
            })
    finally:
        gc.callbacks.remove(on_gc)
    out = {"tasks": args.tasks, "freeze": not args.no_freeze,
           "frozen_objects": gc.get_freeze_count(), "rounds": rounds}
    ray.shutdown()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
