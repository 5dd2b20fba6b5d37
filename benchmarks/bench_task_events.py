"""What recording task events costs: CPU per no-op task with them on and off.

Throughput on a shared, loaded machine swings by several times between runs, so this
counts CPU instead: the CPU time the driver and every process it started (raylet,
workers, Redis) spend to run N no-op tasks, per task, with task events on and off
(``_system_config={"task_events_enabled": ...}``, or with ``--switch option`` the
public per-task option ``enable_task_events``, which Ray 2.x has too), in fresh
clusters, alternating, with each mode's throughput beside it. It also times this
project's recorder's own calls alone (one submitted + started + finished per task).
Prints JSON. ``--python`` runs the clusters under another interpreter, e.g. Ray 2.60
in a venv of its own (there only ``--switch option`` applies):

    .venv/bin/python benchmarks/bench_task_events.py [--tasks 20000] [--rounds 3]
    .venv/bin/python benchmarks/bench_task_events.py --switch option \
        --python /path/to/ray-venv/bin/python
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
by_option = sys.argv[3] == "option"
if by_option:
    ray.init(num_cpus=2, include_dashboard=False)
else:
    ray.init(num_cpus=2, _system_config={"task_events_enabled": enabled})

@ray.remote
def _noop():
    return None

noop = _noop.options(enable_task_events=enabled) if by_option else _noop

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


def run_child(python: str, mode: str, n: int, switch: str) -> dict:
    out = subprocess.run([python, "-c", CHILD, mode, str(n), switch], capture_output=True,
                         text=True, timeout=900, cwd="/")  # (not our sources for a peer)
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
    p.add_argument("--switch", choices=("config", "option"), default="config",
                   help="turn events off for the whole cluster or per task")
    p.add_argument("--python", default=sys.executable,
                   help="the interpreter whose ray runs the clusters (a peer's venv)")
    args = p.parse_args()
    peer = os.path.realpath(args.python) != os.path.realpath(sys.executable)
    if peer and args.switch != "option":
        p.error("a peer's ray is switched per task: add --switch option")
    runs: dict[str, list[dict]] = {"on": [], "off": []}
    for _ in range(args.rounds):
        for mode in ("on", "off"):
            runs[mode].append(run_child(args.python, mode, args.tasks, args.switch))
    med = {mode: statistics.median(r["cpu_us_per_task"] for r in rs) for mode, rs in runs.items()}
    rate = {mode: statistics.median(r["tasks_per_s"] for r in rs) for mode, rs in runs.items()}
    result = {
        "python": args.python, "switch": args.switch, "tasks": args.tasks,
        "rounds": args.rounds, "loadavg": os.getloadavg(), "runs": runs,
        "median_cpu_us_per_task": med, "median_tasks_per_s": rate,
        "events_cpu_overhead_ratio": med["on"] / med["off"],
        "events_throughput_ratio": rate["on"] / rate["off"],
    }
    if not peer:
        result["recorder_alone_cpu_us_per_task"] = recorder_cost_us()
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
