"""`ray status` with an autoscaler, all real processes on this machine: `ray start --head
--autoscaling-config` starts the monitor (in-memory provider); a driver's queued tasks make
it launch a worker whose start command is a real `ray start` joining the cluster on its own
loopback address (127.0.0.<n+1> for provider node mem-<n>); `ray status` prints the record
the monitor publishes each round, as Ray prints it."""

from __future__ import annotations

import glob
import os
import re
import socket
import subprocess
import sys
import textwrap
import time

import pytest
import yaml

pytestmark = pytest.mark.slow

RAY = [sys.executable, "-m", "ray.scripts.cli"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _config(tmp_path, port: int) -> str:
    # The memory provider gives node mem-<n> the address 127.0.<n // 250>.<n % 250 + 1> and
    # runs its commands with HOME=<root>/mem-<n>/home: the worker binds that address.
    start_worker = (
        "n=$(basename $(dirname $HOME)); n=${n#mem-}; "
        f"{sys.executable} -m ray.scripts.cli start --address=127.0.0.1:{port} --num-cpus=2 "
        "--node-ip-address=127.0.$((n / 250)).$((n % 250 + 1)) --temp-dir=$HOME/ray"
    )
    path = tmp_path / "autoscaler.yaml"
    path.write_text(yaml.safe_dump({
        "cluster_name": f"status{port}",
        "provider": {"type": "external",
                     "module": "ray.autoscaler.providers.memory.InMemoryNodeProvider",
                     "root_dir": str(tmp_path / "nodes")},
        "max_workers": 1,
        "idle_timeout_minutes": 60,  # no scale-down while the test reads the status
        "head_node_type": "head",
        "available_node_types": {"head": {"resources": {"CPU": 1}},
                                 "w": {"resources": {"CPU": 2}}},
        "worker_start_ray_commands": [start_worker],
    }))
    return str(path)


DRIVER = textwrap.dedent("""
    import os, sys, time, ray
    ray.init(address=sys.argv[1])

    @ray.remote(num_cpus=2)
    def where(flag):
        while not os.path.exists(flag):  # held until the test has read the status
            time.sleep(0.1)
        return ray.get_runtime_context().get_node_id()

    @ray.remote(num_gpus=1)
    def never():
        return 0

    pending_forever = never.remote()
    print("HEAD", ray.get_runtime_context().get_node_id(), flush=True)
    print("RAN_ON", ray.get(where.remote(sys.argv[2]), timeout=240), flush=True)
""")


def _status(port: int) -> str:
    out = subprocess.run(RAY + ["status", "--address", f"127.0.0.1:{port}"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def _block(text: str, title: str) -> list[str]:
    """The lines under ``title:`` up to the next unindented line."""
    lines = text.splitlines()
    start = lines.index(f"{title}:") + 1
    block = []
    for line in lines[start:]:
        if not line.startswith(" "):
            break
        block.append(line.strip())
    return block


def test_ray_status_prints_the_autoscalers_nodes_pending_launches_and_demands(tmp_path):
    port = _free_port()
    head_tmp = str(tmp_path / "head")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    started = subprocess.run(
        RAY + ["start", "--head", "--port", str(port), "--num-cpus", "1", "--temp-dir",
               head_tmp, "--include-dashboard", "false", "--node-ip-address", "127.0.0.1",
               "--autoscaling-config", _config(tmp_path, port)],
        capture_output=True, text=True, timeout=120, env=env)
    driver = None
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        deadline = time.time() + 60
        while "Autoscaler status" not in (text := _status(port)):
            assert time.time() < deadline, f"the monitor never reported:\n{text}"
            time.sleep(0.5)
        assert _block(text, "Active") == ["1 node_127.0.0.1"]  # the head: not launched by it
        assert _block(text, "Pending") == ["(no pending nodes)"]
        assert _block(text, "Demands") == ["(no resource demands)"]

        flag = tmp_path / "release"
        driver = subprocess.Popen([sys.executable, "-c", DRIVER, f"127.0.0.1:{port}", str(flag)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=env)  # (the infeasible warning goes to its stderr)
        seen_pending, deadline = [], time.time() + 180
        while True:
            text = _status(port)
            pending = _block(text, "Pending")
            if re.fullmatch(r"127\.0\.0\.2: w, [a-z-]+", pending[0]):
                seen_pending.append(pending[0])
            # Done once the worker is active and the held task runs there (2 of 3 CPUs).
            if "1 w" in _block(text, "Active") and "2/3 CPU" in _block(text, "Usage"):
                break
            assert time.time() < deadline, f"no worker became active:\n{text}"
            time.sleep(0.3)
        assert seen_pending, "the launched worker was never listed as pending"
        assert text.startswith("======== Autoscaler status: ")
        for section in ("Node status", "Recent failures:", "Resources", "Usage:", "Demands:"):
            assert section in text, text
        assert _block(text, "Recent failures") == ["(no failures)"]
        assert "{'CPU': 1, 'GPU': 1}: 1+ pending tasks/actors" in _block(text, "Demands")
        assert "infeasible: {'CPU': 1.0, 'GPU': 1.0} fits no node type" in text
        assert re.search(r"last round \d+\.\d s ago \(every 5 s\)", text), text

        flag.write_text("go")
        out, err = driver.communicate(timeout=120)
        head = re.search(r"HEAD (\w+)", out)
        ran_on = re.search(r"RAN_ON (\w+)", out)
        assert head and ran_on, f"driver exit {driver.returncode}:\n{out}\nstderr:\n{err}"
        assert ran_on.group(1) != head.group(1), out  # on the node it launched
    finally:
        if driver is not None and driver.poll() is None:
            driver.kill()
            driver.wait()
        for worker_tmp in glob.glob(str(tmp_path / "nodes" / "mem-*" / "home" / "ray")):
            subprocess.run(RAY + ["stop", "--temp-dir", worker_tmp], capture_output=True,
                           timeout=60)
        subprocess.run(RAY + ["stop", "--temp-dir", head_tmp], capture_output=True, timeout=60)
