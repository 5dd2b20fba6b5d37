"""The memory monitor: pure kill decisions (events in, victim out), the memory reading,
and the raylet killing the newest retriable task of a real node while other work
completes.

The integration test runs its cluster in a memory cgroup of its own (limited to 3 GiB;
the monitor reads the cgroup's figures), so the decision depends only on the test's
processes and never stresses a shared machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time

import pytest

from ray._private.messages import WorkerKilled
from ray._private.raylet.memory_monitor import (
    OUT_OF_MEMORY,
    Kill,
    LeasedWorker,
    MemoryMonitor,
    MemoryUsage,
    kill_order,
    read_memory_usage,
    threshold_bytes,
)

GIB = 1024**3
MIB = 1024**2


def worker(name: str, granted_at: float, *, actor=False, retriable=None) -> LeasedWorker:
    return LeasedWorker(name.encode(), pid=hash(name) & 0xFFFF, granted_at=granted_at,
                        is_actor=actor, retriable=retriable)


HIGH = MemoryUsage(used_bytes=97 * GIB, total_bytes=100 * GIB)
LOW = MemoryUsage(used_bytes=50 * GIB, total_bytes=100 * GIB)


# --- the policy -------------------------------------------------------------------------------
def test_newest_retriable_task_goes_first_then_actors_with_restarts_then_the_rest():
    workers = [
        worker("old-task", 1.0),
        worker("new-task", 5.0),
        worker("no-retry-task", 9.0, retriable=False),
        worker("restartable-actor", 8.0, actor=True, retriable=True),
        worker("plain-actor", 10.0, actor=True),  # default: no restarts
    ]
    order = [w.worker_id.decode() for w in kill_order(workers)]
    assert order == ["new-task", "old-task", "restartable-actor", "plain-actor",
                     "no-retry-task"]


def test_nothing_is_killed_below_the_threshold():
    monitor = MemoryMonitor(usage_threshold=0.95)
    assert monitor.sampled(LOW, [worker("t", 1.0)], now=0.0) is None
    assert monitor.sampled(HIGH, [], now=0.0) is None  # nobody to kill


def test_one_kill_at_a_time_until_the_victim_exits_or_a_timeout():
    monitor = MemoryMonitor(usage_threshold=0.95, kill_timeout_s=10.0)
    a, b = worker("a", 1.0), worker("b", 2.0)
    kill = monitor.sampled(HIGH, [a, b], now=100.0)
    assert isinstance(kill, Kill) and kill.worker == b
    assert "memory_usage_threshold" in kill.message and "task_oom_retries" in kill.message
    assert monitor.sampled(HIGH, [a, b], now=101.0) is None  # b is still exiting
    assert monitor.sampled(HIGH, [a], now=102.0).worker == a  # b is gone: next one
    # A victim that does not exit within the timeout does not block the monitor forever.
    assert monitor.sampled(HIGH, [a], now=111.0) is None
    assert monitor.sampled(HIGH, [a], now=112.5).worker == a
    monitor.worker_exited(b"a")
    assert monitor.sampled(LOW, [a], now=113.0) is None
    assert monitor.kills == 3


def test_min_memory_free_bytes_raises_the_kill_line_on_big_hosts():
    total = 1000 * GIB
    assert threshold_bytes(total, 0.9, -1) == 900 * GIB
    assert threshold_bytes(total, 0.9, 10 * GIB) == 990 * GIB  # 100 GiB free is plenty
    monitor = MemoryMonitor(usage_threshold=0.9, min_free_bytes=10 * GIB)
    assert not monitor.over_threshold(MemoryUsage(950 * GIB, total))
    assert monitor.over_threshold(MemoryUsage(995 * GIB, total))


def test_worker_killed_message_round_trips_and_rejects_garbage():
    note = WorkerKilled(b"w" * 20, OUT_OF_MEMORY, "low on memory")
    assert WorkerKilled.from_wire(note.to_wire()) == note
    with pytest.raises(ValueError, match="WorkerKilled"):
        WorkerKilled.from_wire([b"w", 3])


# --- reading memory -------------------------------------------------------------------------------
def test_memory_reading_prefers_the_process_cgroup_when_limited(tmp_path):
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "meminfo").write_text("MemTotal: 16000000 kB\nMemFree: 1000 kB\n"
                                  "MemAvailable: 12000000 kB\n")
    (proc / "self" / "cgroup").write_text("0::/jobs/a\n")
    root = tmp_path / "cgroup"
    own = root / "jobs" / "a"
    own.mkdir(parents=True)
    machine = MemoryUsage(4000000 * 1024, 16000000 * 1024)
    assert read_memory_usage(str(proc), str(root)) == machine
    (own / "memory.max").write_text(f"{2 * GIB}\n")
    (own / "memory.current").write_text(f"{GIB + 100 * MIB}\n")
    (own / "memory.stat").write_text(f"anon 5\ninactive_file {100 * MIB}\n")
    assert read_memory_usage(str(proc), str(root)) == MemoryUsage(GIB, 2 * GIB)
    (own / "memory.max").write_text("max\n")
    assert read_memory_usage(str(proc), str(root)) == machine
    # cgroup v1: the memory controller's hierarchy
    (proc / "self" / "cgroup").write_text("4:memory:/jobs/b\n0::/\n")
    v1 = root / "memory" / "jobs" / "b"
    v1.mkdir(parents=True)
    (v1 / "memory.limit_in_bytes").write_text(f"{3 * GIB}\n")
    (v1 / "memory.usage_in_bytes").write_text(f"{2 * GIB}\n")
    (v1 / "memory.stat").write_text(f"cache 1\ntotal_inactive_file {GIB}\n")
    assert read_memory_usage(str(proc), str(root)) == MemoryUsage(GIB, 3 * GIB)


def test_memory_reading_of_this_machine_is_sane():
    usage = read_memory_usage()
    assert 0 < usage.used_bytes < usage.total_bytes


# --- a real node, in a memory cgroup of its own ---------------------------------------------
CGROUP_LIMIT = 3 * GIB
SCENARIO = """
import json, os, sys, time
import numpy as np
import ray

@ray.remote
def allocate_until_killed(marker=None):
    # Allocates (and touches) 64 MiB at a time until the monitor kills it; on a retry
    # (the marker file exists) it returns at once.
    if marker is not None and os.path.exists(marker):
        return "retried"
    if marker is not None:
        open(marker, "w").close()
    held = []
    while len(held) < 40:  # 2.5 GiB, under the cgroup's hard limit of 3 GiB
        held.append(np.ones(64 * 2**20, dtype=np.uint8))
        time.sleep(0.02)
    time.sleep(30)
    return "not killed"

@ray.remote
def steady(i):
    time.sleep(0.3)
    return i

def outcome(ref):
    try:
        return ray.get(ref, timeout=120)
    except ray.exceptions.RayError as exc:
        return type(exc).__name__

ray.init(num_cpus=2, object_store_memory=100 * 2**20, _system_config={
    "memory_usage_threshold": float(sys.argv[1]), "memory_monitor_refresh_ms": 100,
    "task_oom_retries": 1, "task_oom_retry_delay_base_ms": 100})
result = {}
ray.get([steady.remote(i) for i in range(2)])  # workers up
background = [steady.remote(i) for i in range(6)]
# The newest retriable task is the one allocating: it is killed (twice: its one OOM
# retry allocates again) while the tasks started before it complete.
result["hog"] = outcome(allocate_until_killed.options(max_retries=1).remote())
result["background"] = ray.get(background, timeout=60)
result["retried"] = outcome(allocate_until_killed.options(max_retries=2).remote(sys.argv[2]))
result["not_retriable"] = outcome(allocate_until_killed.options(max_retries=0).remote())
try:
    ray.get(allocate_until_killed.options(max_retries=0).remote(), timeout=120)
except ray.exceptions.OutOfMemoryError as exc:
    result["message"] = str(exc)
result["after"] = ray.get(steady.remote(7), timeout=60)
ray.shutdown()
print("RESULT " + json.dumps(result), flush=True)
"""


def _memory_cgroup(tmp_name: str):
    """A v1 or v2 memory cgroup limited to CGROUP_LIMIT, or None if we may not make one."""
    for parent, limit_file in (("/sys/fs/cgroup/memory", "memory.limit_in_bytes"),
                               ("/sys/fs/cgroup", "memory.max")):
        if not os.path.exists(os.path.join(parent, limit_file if parent.endswith("memory")
                                           else "cgroup.controllers")):
            continue
        path = os.path.join(parent, tmp_name)
        try:
            os.mkdir(path)
            with open(os.path.join(path, limit_file), "w") as f:
                f.write(str(CGROUP_LIMIT))
        except OSError:
            with contextlib.suppress(OSError):
                os.rmdir(path)
            continue
        return path
    return None


@pytest.mark.slow
def test_monitor_kills_the_newest_retriable_task_while_other_work_completes(tmp_path):
    """The cluster runs in a cgroup limited to 3 GiB, so the monitor measures only its
    own processes (never the other users of the machine); it kills at 50% of that."""
    cgroup = _memory_cgroup(f"ray-oom-test-{os.getpid()}")
    if cgroup is None:
        pytest.skip("needs a writable memory cgroup (run as root)")
    try:
        def enter_cgroup():
            with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))

        run = subprocess.run(
            [sys.executable, "-c", SCENARIO, "0.5", str(tmp_path / "attempted")],
            preexec_fn=enter_cgroup, capture_output=True, text=True, timeout=600)
        lines = [line for line in run.stdout.splitlines() if line.startswith("RESULT ")]
        assert lines, run.stdout[-3000:] + run.stderr[-3000:]
        result = json.loads(lines[0][len("RESULT "):])
    finally:
        deadline = time.monotonic() + 30
        while True:  # every process of the cluster has to be gone first
            try:
                os.rmdir(cgroup)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    # Without retries left its owner raises OutOfMemoryError (the raylet's recorded cause).
    assert result["hog"] == "OutOfMemoryError", result
    assert result["background"] == list(range(6)), result
    assert result["retried"] == "retried", result
    assert result["not_retriable"] == "OutOfMemoryError", result
    assert result["after"] == 7, result
    assert "ran low on memory" in result["message"] and "task_oom_retries" in result["message"]
    assert "ran low on memory" in run.stderr  # also printed by the driver as it happened


# --- retriability on the lease, the OOM budget, actors ---------------------------------------
def test_lease_requests_carry_retriability_and_old_senders_still_parse():
    from ray._private.messages import LeaseRequest, MalformedMessage

    for retriable in (True, False, None):
        wire = LeaseRequest({"CPU": 1}, b"j", retriable=retriable).to_wire()
        assert LeaseRequest.from_wire(wire).retriable is retriable
    assert LeaseRequest.from_wire([{"CPU": 1}, b"j", False, False, None]).retriable is None
    with pytest.raises(MalformedMessage, match="retriable"):
        LeaseRequest.from_wire([{"CPU": 1}, b"j", False, False, None, False, None, None, "yes"])


def test_task_oom_retries_defaults_to_unlimited_and_is_validated():
    from ray._private.config import build_config

    assert build_config().task_oom_retries == -1  # Ray's default: retry OOM kills for ever
    assert build_config().task_oom_retry_delay_base_ms == 1000
    with pytest.raises(ValueError, match="task_oom_retries"):
        build_config({"task_oom_retries": -2})


OOM_EVERYTHING = """
import json, os, sys, time
import ray

@ray.remote
def runs():
    time.sleep(60)

@ray.remote
class Holder:
    def ping(self):
        return "pong"

    def wait(self):
        time.sleep(60)

def failure(fn):
    try:
        fn()
        return {"error": None}
    except ray.exceptions.RayError as exc:
        return {"error": type(exc).__name__, "message": str(exc),
                "actor_error": isinstance(exc, ray.exceptions.RayActorError)}

# Every leased worker is over a threshold this low: the monitor kills whatever runs.
ray.init(num_cpus=2, _system_config={
    "memory_usage_threshold": 0.001, "memory_monitor_refresh_ms": 50,
    "task_oom_retries": 2, "task_oom_retry_delay_base_ms": 100})
out = {}
start = time.monotonic()
out["budget"] = failure(lambda: ray.get(runs.options(max_retries=1).remote(), timeout=120))
out["budget_s"] = time.monotonic() - start
print("NO RETRIES FROM HERE", file=sys.stderr, flush=True)
out["no_retries"] = failure(lambda: ray.get(runs.options(max_retries=0).remote(), timeout=120))
plain = Holder.remote()
out["actor"] = failure(lambda: ray.get(plain.wait.remote(), timeout=120))
out["actor_later"] = failure(lambda: ray.get(plain.ping.remote(), timeout=120))
restarting = Holder.options(max_restarts=1).remote()
out["restarting"] = failure(lambda: [ray.get(restarting.wait.remote(), timeout=120)
                                     for _ in range(5)])
def until_error(call):  # the restarted actor lives until the monitor's next kill
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        call()
        time.sleep(0.05)
out["restarting_later"] = failure(
    lambda: until_error(lambda: ray.get(restarting.ping.remote(), timeout=120)))
ray.shutdown()
print("RESULT " + json.dumps(out), flush=True)
"""


@pytest.mark.slow
def test_oom_kills_draw_on_their_own_budget_and_actors_die_with_the_message():
    run = subprocess.run([sys.executable, "-c", OOM_EVERYTHING], capture_output=True,
                         text=True, timeout=600)
    lines = [line for line in run.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, run.stdout[-3000:] + run.stderr[-3000:]
    out = json.loads(lines[0][len("RESULT "):])
    # max_retries=1 is not touched by OOM kills: 1 run + task_oom_retries=2 OOM retries,
    # after 0.1 s and 0.2 s of backoff; the last kill knew no retry was left.
    budget_log, no_retries_log = run.stderr.split("NO RETRIES FROM HERE")
    assert "running it again in 0.1 s (1 OOM retries left)" in budget_log, budget_log[-3000:]
    assert "running it again in 0.2 s (0 OOM retries left)" in budget_log, budget_log[-3000:]
    assert budget_log.count("running it again") == 2
    assert out["budget"]["error"] == "OutOfMemoryError", out
    assert out["budget_s"] >= 0.3, out
    assert "no retriable work was left to kill (this task cannot be retried)" \
        in out["budget"]["message"], out
    # max_retries=0: never retried on OOM either; the raylet knew from the lease.
    assert "running it again" not in no_retries_log
    assert out["no_retries"]["error"] == "OutOfMemoryError", out
    assert "no retriable work was left to kill (this task cannot be retried)" \
        in out["no_retries"]["message"], out
    # An actor killed for memory: ActorDiedError (a RayActorError) with the monitor's
    # message, for the call that was running and for later calls.
    for key in ("actor", "actor_later"):
        assert out[key]["error"] == "ActorDiedError" and out[key]["actor_error"], out
        assert "ran low on memory" in out[key]["message"], out
    assert "this actor cannot be retried" in out["actor"]["message"], out
    # With max_restarts=1 it comes back once (killed first as retriable), then dies.
    for key in ("restarting", "restarting_later"):
        assert out[key]["error"] == "ActorDiedError", out
        assert "ran low on memory" in out[key]["message"], out
    # (whether the message also says max_restarts is exhausted depends on whether the
    # caller learns the death from the GCS or from its failed call first)
