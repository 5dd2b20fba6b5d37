"""Start-up, tear-down and memory: nothing outlives the driver, memory stays flat."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import psutil
import pytest

import ray


def _wait_gone(pids, timeout_s=20.0):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        alive = [p for p in pids if psutil.pid_exists(p)
                 and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        if not alive:
            return []
        time.sleep(0.1)
    return alive


def test_killing_the_driver_with_sigkill_tears_everything_down(tmp_path):
    script = textwrap.dedent("""
        import json, os, sys, time, psutil, ray
        ray.init(num_cpus=2, object_store_memory=100 * 1024**2)
        @ray.remote
        def f():
            return os.getpid()
        ray.get([f.remote() for _ in range(4)])
        pids = [p.pid for p in psutil.Process().children(recursive=True)]
        print(json.dumps(pids), flush=True)
        time.sleep(600)
    """)
    before_shm = set(os.listdir("/dev/shm"))
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        pids = json.loads(proc.stdout.readline())
        assert len(pids) >= 3  # redis, raylet, zygote/workers
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert _wait_gone(pids) == []
    leftover = {n for n in set(os.listdir("/dev/shm")) - before_shm if not n.startswith("sem.mp-")}
    assert leftover == set()


def test_shutdown_with_live_task_results_in_the_store_is_quiet():
    # The driver's own raylet announcing its exit at shutdown is not a node failure:
    # nothing is "rebuilt" and nothing is logged.
    script = textwrap.dedent("""
        import numpy as np, ray
        ray.init(num_cpus=1)
        @ray.remote
        def big():
            return np.zeros(1_000_000)
        refs = [big.remote() for _ in range(3)]
        assert sum(ray.get(r).size for r in refs) == 3_000_000
        ray.shutdown()
        print("done")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "done"
    assert "rebuilding" not in proc.stderr and "died" not in proc.stderr, proc.stderr


def test_put_and_drop_large_objects_keeps_memory_flat(ray_start):
    ray_start(object_store_memory=400 * 1024**2)
    me = psutil.Process()

    def anon_mb():
        with open(f"/proc/{me.pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) / 1024
        return 0

    block = np.ones(100 * 1024**2, dtype=np.uint8)
    for _ in range(5):
        ray.get(ray.put(block))
    start = anon_mb()
    for _ in range(40):  # 4 GB through a 400 MB store
        ref = ray.put(block)
        assert ray.get(ref)[-1] == 1
        del ref
    assert anon_mb() - start < 50


def test_object_id_seed_gives_repeatable_ids():
    ids = []
    for _ in range(2):
        ray.init(num_cpus=1, object_store_memory=100 * 1024**2, object_id_seed=42)
        try:
            ids.append([ray.put(i).hex() for i in range(3)])
        finally:
            ray.shutdown()
    assert ids[0] == ids[1]


def test_worker_logs_are_written_per_worker(ray_start, tmp_path):
    info = ray_start(temp_dir=str(tmp_path), log_to_driver=False)

    @ray.remote
    def shout():
        print("into the log file")
        return os.getpid()

    pid = ray.get(shout.remote())
    logs = os.path.join(info["session_dir"], "logs")
    deadline = time.time() + 5
    while time.time() < deadline:
        found = [n for n in os.listdir(logs) if n.startswith("worker-") and n.endswith(".out")
                 and "into the log file" in open(os.path.join(logs, n)).read()]
        if found:
            break
        time.sleep(0.1)
    assert found, os.listdir(logs)
    assert pid > 0


@pytest.mark.parametrize("bad", [{"num_cpus": -1}, {"resources": {"CPU": 2}}])
def test_bad_init_arguments_raise_clear_errors(bad):
    with pytest.raises((ValueError, TypeError, ray.exceptions.RayError)):
        ray.init(object_store_memory=100 * 1024**2, **bad)
    ray.shutdown()
