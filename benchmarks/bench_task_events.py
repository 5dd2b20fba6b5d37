"""What recording task events costs: CPU per no-op task with them on and off.

Throughput on a shared, loaded machine swings by several times between runs, so this
counts CPU instead: the CPU time the driver and every process it started (raylet,
workers, Redis) spend to run N no-op tasks, per task, with task events on and off
(``_system_config={"task_events_enabled": ...}``), in fresh clusters, alternating.
It also times the recorder's own calls alone (one submitted + started + finished per
task). Prints JSON.

    .venv/bin/python benchmarks/bench_task_events.py [--tasks 20000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CHILD = r"""
import json, sys, time, psutil, ray
enabled = sys.argv[1] == "on"
n = int(sys.argv[2])
ray.init(num_cpus=2, _system_config={"task_events_enabled": enabled})

@ray.remote
def noop():
    return None

ray.get([noop.remote() for _ in range(2000)])  # warm up workers and leases
time.sleep(2.0)

def cpu():
    procs = [psutil.Process()] + psutil.Process().children(recursive=True)
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total

c0, w0 = cpu(), time.perf_counter()
ray.get([noop.remote() for _ in range(n)])
c1, w1 = cpu(), time.perf_counter()
time.sleep(0.5)  # the last flush of events belongs to the cost too
c2 = cpu()
print(json.dumps({"cpu_us_per_task": (c2 - c0) / n * 1e6, "tasks_per_s": n / (w1 - w0)}))
ray.shutdown()
"""


def run_child(mode: str, n: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, mode, str(n)], capture_output=True,
                         text=True, timeout=900)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise SystemExit(f"run failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return json.loads(lines[-1])


def recorder_cost_us(n: int = 100_000) -> float:
    """CPU per task of the recorder alone: one submitted, started, finished each."""
    from ray._private.task_events import BufferedTaskEvents

    rec = BufferedTaskEvents(node_id=os.urandom(20), worker_id=os.urandom(20), capacity=n + 1)
    ids = [os.urandom(16) for _ in range(n)]
    parent = os.urandom(16)
    t0 = time.process_time()
    for task_id in ids:
        rec.submitted(task_id, name="__main__.noop", kind=0, job_hex="01000000",
                      actor_id=None, parent_task_id=parent)
        rec.started(task_id, "__main__.noop")
        rec.finished(task_id)
    return (time.process_time() - t0) / n * 1e6


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--tasks", type=int, default=20_000)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    runs: dict[str, list[dict]] = {"on": [], "off": []}
    for _ in range(args.rounds):
        for mode in ("on", "off"):
            runs[mode].append(run_child(mode, args.tasks))
    med = {mode: statistics.median(r["cpu_us_per_task"] for r in rs) for mode, rs in runs.items()}
    print(json.dumps({
        "tasks": args.tasks, "rounds": args.rounds, "loadavg": os.getloadavg(),
        "runs": runs, "median_cpu_us_per_task": med,
        "events_cpu_overhead_ratio": med["on"] / med["off"],
        "recorder_alone_cpu_us_per_task": recorder_cost_us(),
    }, indent=1))


if __name__ == "__main__":
    main()
