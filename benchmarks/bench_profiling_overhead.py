"""No-op task throughput with profiling events on (the default) and off; prints JSON.

Each round starts a fresh 2-CPU cluster with ``_internal_config``
``{"profiling_enabled": true|false}`` and times ``ray.get([noop.remote() ...])``
(best of ``--repeat``). Rounds alternate on/off so load from other processes
on a shared machine hits both sides alike (order on, off, off, on, ...); the
medians are compared. Wall-clock
throughput on a loaded machine is noisy, so the CPU time the driver and every
process it started spent per task (user + system) is reported too: on an idle
machine throughput is bound by it. Finally the CPU the profiling code itself adds
per task is measured in isolation, on the real code paths (the owner's submit
stamp in the task spec, the worker's execution span, the flush of that one event
into a live GCS, and Redis' share): a figure that other load on the machine
barely moves.

``--same-cluster`` instead flips profiling in one running cluster between
phases (the driver's config, and each worker's through a task that replaces
it), so cluster start-up variance drops out; phases alternate on, off, off, on.

    .venv/bin/python benchmarks/bench_profiling_overhead.py --rounds 4
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from bench_core import _cluster_cpu_s, _wait_until_quiet  # same directory


def one_round(profiling: bool, n_tasks: int, repeat: int) -> tuple[float, float]:
    import ray

    ray.init(num_cpus=2, _internal_config=json.dumps({"profiling_enabled": profiling}))
    try:
        @ray.remote
        def noop():
            return None

        ray.get([noop.remote() for _ in range(500)])  # warm up workers and leases
        _wait_until_quiet()  # past the store's background pre-fault
        best = None
        cpu0 = _cluster_cpu_s()
        for _ in range(repeat):
            t0 = time.perf_counter()
            ray.get([noop.remote() for _ in range(n_tasks)])
            dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
        cpu_us_per_task = (_cluster_cpu_s() - cpu0) / (repeat * n_tasks) * 1e6
        return n_tasks / best, cpu_us_per_task
    finally:
        ray.shutdown()


def same_cluster(n_tasks: int, phases: int) -> dict:
    """Throughput and CPU per task, profiling flipped between phases of one cluster."""

    import ray
    from ray._private import runtime as _runtime

    ray.init(num_cpus=2)
    try:
        @ray.remote
        def noop():
            return None

        @ray.remote
        def set_profiling(enabled, hold_s):
            _runtime.current().profiler.enabled = enabled
            time.sleep(hold_s)  # so each of the two workers takes one
            return os.getpid()

        def flip(enabled):
            _runtime.current().profiler.enabled = enabled
            pids = set(ray.get([set_profiling.remote(enabled, 0.3) for _ in range(2)]))
            if len(pids) != 2:
                raise RuntimeError(f"expected both workers to flip, got pids {pids}")

        ray.get([noop.remote() for _ in range(3000)])
        _wait_until_quiet()  # past the store's background pre-fault
        rates, cpu = {True: [], False: []}, {True: [], False: []}
        for i in range(phases):
            enabled = i % 4 in (0, 3)
            flip(enabled)
            cpu0, t0 = _cluster_cpu_s(), time.perf_counter()
            ray.get([noop.remote() for _ in range(n_tasks)])
            rates[enabled].append(n_tasks / (time.perf_counter() - t0))
            cpu[enabled].append((_cluster_cpu_s() - cpu0) / n_tasks * 1e6)
    finally:
        ray.shutdown()
    on, off = statistics.median(rates[True]), statistics.median(rates[False])
    cpu_on, cpu_off = statistics.median(cpu[True]), statistics.median(cpu[False])
    return {"mode": "same cluster", "tasks_per_phase": n_tasks, "phases": phases,
            "profiling_on_tasks_per_s": round(on), "profiling_off_tasks_per_s": round(off),
            "on_over_off": round(on / off, 3),
            "profiling_on_cpu_us_per_task": round(cpu_on, 1),
            "profiling_off_cpu_us_per_task": round(cpu_off, 1),
            "cpu_on_over_off": round(cpu_on / cpu_off, 3),
            "loadavg_1m": os.getloadavg()[0], "cpus": os.cpu_count()}


def added_cpu_us_per_task(n_tasks: int = 20_000) -> dict:
    """CPU the profiling code adds per task, measured on its real code paths."""

    import psutil

    import ray
    from ray._private import profiling
    from ray._private import runtime as _runtime
    from ray._private.messages import TaskSpec
    from ray._private.runtime.profiler import Profiler
    from ray._private.runtime.task_executor import _span_extra

    ray.init(num_cpus=1)
    try:
        rt = _runtime.current()
        redis = next(p for p in psutil.Process().children(recursive=True)
                     if "valkey" in " ".join(p.cmdline()) or "redis" in " ".join(p.cmdline()))
        profiler = Profiler(rt.gcs, enabled=True, capacity=10 * n_tasks, flush_period_s=3600,
                            node_ip=rt.node_ip, component="driver:bench")
        buffer = profiler.events()
        task_id = bytes(range(16))
        # A no-op task's spec: no arguments; the owner stamps submitted_at into it.
        spec = TaskSpec(task_id=task_id, job_id="job", function_id=b"f", name="noop", args=[],
                        kwarg_names=[], num_returns=1, owner=rt.address)
        t0 = time.thread_time()
        for _ in range(n_tasks):
            spec.submitted_at = profiler.submit_stamp()
        submit = time.thread_time() - t0
        t0 = time.thread_time()
        for _ in range(n_tasks):  # what TaskExecutor.execute does around each task
            events = profiler.events()
            start = time.time() if events is not None else 0.0
            try:
                pass
            finally:
                if events is not None:
                    events.record("task:execute", "noop", start, _span_extra(spec))
        span = time.thread_time() - t0
        redis_cpu0 = sum(redis.cpu_times()[:2])
        t0 = time.thread_time()
        profiling.flush(rt.gcs, buffer, rt.node_ip, "driver:bench")
        flush = time.thread_time() - t0
        redis_cpu = sum(redis.cpu_times()[:2]) - redis_cpu0
    finally:
        profiler.stop()
        ray.shutdown()
    per = {"owner_submit_stamp": submit, "worker_execute_span": span,
           "flush_one_event": flush, "redis_store_one_event": redis_cpu}
    out = {k: round(v / n_tasks * 1e6, 2) for k, v in per.items()}
    out["total"] = round(sum(per.values()) / n_tasks * 1e6, 2)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=4, help="clusters per setting")
    p.add_argument("--tasks", type=int, default=10_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--same-cluster", action="store_true",
                   help="flip profiling between phases of one cluster (--rounds*4 phases)")
    args = p.parse_args()
    if args.same_cluster:
        result = same_cluster(max(args.tasks, 20_000), args.rounds * 4)
        result["added_cpu_us_per_task"] = added_cpu_us_per_task()
        print(json.dumps(result, indent=2))
        return
    rates, cpu = {True: [], False: []}, {True: [], False: []}
    for i in range(args.rounds * 2):
        profiling = i % 4 in (0, 3)
        rate, cpu_us = one_round(profiling, args.tasks, args.repeat)
        rates[profiling].append(rate)
        cpu[profiling].append(cpu_us)
    on, off = statistics.median(rates[True]), statistics.median(rates[False])
    cpu_on, cpu_off = statistics.median(cpu[True]), statistics.median(cpu[False])
    added = added_cpu_us_per_task()
    print(json.dumps({
        "added_cpu_us_per_task": added,
        "added_over_off_cpu_per_task": round(added["total"] / cpu_off, 3),
        "tasks": args.tasks,
        "profiling_on_tasks_per_s": round(on),
        "profiling_off_tasks_per_s": round(off),
        "on_over_off": round(on / off, 3),
        "profiling_on_cpu_us_per_task": round(cpu_on, 1),
        "profiling_off_cpu_us_per_task": round(cpu_off, 1),
        "cpu_on_over_off": round(cpu_on / cpu_off, 3),
        "rounds_on": [round(r) for r in rates[True]],
        "rounds_off": [round(r) for r in rates[False]],
        "loadavg_1m": os.getloadavg()[0],
        "cpus": os.cpu_count(),
    }, indent=2))


if __name__ == "__main__":
    main()
