"""Real hosts: network namespaces with sshd, driven over SSH (``multinode``, needs root).

These run the cluster launcher end to end against the ``local`` provider. Until
ray-core's ``ray start`` exists, the start commands launch the autoscaling
monitor directly (reading demand from a file) instead of a Ray cluster; swap them
for the documented ``ray start`` defaults once core can start clusters.
"""

from __future__ import annotations

import json
import os
import sys
import time

import pytest
import yaml
from autoscaler_netns import NetnsHosts, netns_available

from ray.autoscaler.config import load_config
from ray.autoscaler.node_provider import get_node_provider
from ray.autoscaler.tags import (
    NODE_KIND_WORKER,
    STATUS_UP_TO_DATE,
    TAG_RAY_NODE_KIND,
    TAG_RAY_NODE_STATUS,
)

pytestmark = [
    pytest.mark.multinode,
    pytest.mark.skipif(netns_available() is not None, reason=netns_available() or ""),
]

PY = sys.executable


@pytest.fixture
def net():
    with NetnsHosts(n_hosts=3) as hosts:
        tag = hosts.tag
        yield hosts
    assert NetnsHosts.leftover_namespaces(tag) == [], "namespaces left behind"


def test_harness_hosts_have_their_own_ip_and_home_and_reach_each_other(net):
    for host in net.hosts:
        out = net.ssh(host, "ip -4 -o addr show dev eth0 | awk '{print $4}'; echo $HOME")
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == [f"{host.ip}/24", host.home]
    # Host to host: h1 reaches h2's sshd port.
    probe = f"python3 -c \"import socket; socket.create_connection(('{net.hosts[1].ip}', 22), timeout=2)\""
    assert net.ssh(net.hosts[0], probe).returncode == 0


def test_harness_cleanup_kills_processes_left_in_namespaces():
    with NetnsHosts(n_hosts=1) as hosts:
        tag = hosts.tag
        started = hosts.ssh(hosts.hosts[0], "nohup sleep 300 >/dev/null 2>&1 & echo $!")
        pid = int(started.stdout.strip())
        assert os.path.exists(f"/proc/{pid}")
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"
    assert NetnsHosts.leftover_namespaces(tag) == []


def cluster_yaml(net, tmp_path, **extra):
    head, *workers = net.hosts
    load_file = tmp_path / "load.json"
    config = {
        "cluster_name": "netns",
        "min_workers": 0,
        "max_workers": len(workers),
        "idle_timeout_minutes": 0.05,  # 3 s
        "target_utilization_fraction": 1.0,  # scale for queued demand only
        "provider": {
            "type": "local",
            "head_ip": head.ip,
            "worker_ips": [w.ip for w in workers],
            "state_path": str(tmp_path / "cluster.state"),
        },
        "auth": {"ssh_user": "root", "ssh_private_key": net.key_path},
        "head_node_type": "head",
        "available_node_types": {
            "head": {"resources": {"CPU": 1}},
            "worker": {"resources": {"CPU": 2}},
        },
        "file_mounts": {"~/payload": str(tmp_path / "payload")},
        "setup_commands": [
            # "Install" from the local checkout: put its virtualenv on the login PATH.
            f"echo 'export PATH={os.path.dirname(PY)}:$PATH' > ~/.profile",
            "python -c 'import ray.autoscaler' && echo setup-ok > ~/setup.txt",
        ],
        "head_start_ray_commands": [
            # ray-core's `ray start --head --autoscaling-config` will start this monitor.
            f"nohup {PY} -m ray.autoscaler.monitor --autoscaling-config ~/ray_bootstrap_config.yaml"
            f" --load-file {load_file} --interval-s 0.5 --log-file ~/monitor.log"
            " > /dev/null 2>&1 < /dev/null & echo $! > ~/monitor.pid",
        ],
        "worker_start_ray_commands": ["echo head=$RAY_HEAD_IP > ~/worker_started.txt"],
    }
    config.update(extra)
    (tmp_path / "payload").mkdir()
    (tmp_path / "payload" / "data.txt").write_text("synced")
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(config))
    return path, load_file


def cli(net, *args, timeout_s=300):
    done = net.run_driver([PY, "-m", "ray.autoscaler", *map(str, args)], timeout_s=timeout_s)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_private_cluster_quick_start_up_exec_submit_rsync_down(net, tmp_path):
    path, _ = cluster_yaml(net, tmp_path)
    head = net.hosts[0]
    t0 = time.monotonic()
    out = cli(net, "up", path, "--yes")
    up_s = time.monotonic() - t0
    assert f"is up at {head.ip}" in out
    home = head.home
    assert open(os.path.join(home, "setup.txt")).read() == "setup-ok\n"
    assert open(os.path.join(home, "payload", "data.txt")).read() == "synced"
    assert os.path.exists(os.path.join(home, "ray_bootstrap_config.yaml"))
    assert os.path.exists(os.path.join(home, "ray_bootstrap_key.pem"))

    assert cli(net, "get-head-ip", path).strip() == head.ip
    assert cli(net, "exec", path, "ip -4 -o addr show dev eth0 | awk '{print $4}'").strip() == (
        f"{head.ip}/24"
    )
    script = tmp_path / "job.py"
    script.write_text("import socket, sys\nprint('ran with', sys.argv[1:])\n")
    assert "ran with ['x']" in cli(net, "submit", path, script, "x")
    cli(net, "rsync-down", path, "~/setup.txt", tmp_path / "down" / "setup.txt")
    assert (tmp_path / "down" / "setup.txt").read_text() == "setup-ok\n"

    cli(net, "down", path, "--yes")
    provider = get_node_provider(load_config(path).provider, "netns")
    assert provider.non_terminated_nodes({}) == []
    print(f"\nray up (head only, over SSH in netns): {up_s:.2f} s")


def write_load(load_file, nodes=(), demand=()):
    tmp = str(load_file) + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"nodes": list(nodes), "demand": list(demand)}, f)
    os.replace(tmp, load_file)


def wait_for(what, predicate, timeout_s=120):
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def test_autoscaler_brings_a_host_up_for_demand_and_down_after_idle_timeout(net, tmp_path):
    path, load_file = cluster_yaml(net, tmp_path)
    head = net.hosts[0]
    write_load(load_file, nodes=[{"ip": head.ip, "total": {"CPU": 1}, "available": {"CPU": 1}}])
    cli(net, "up", path, "--yes")
    provider = get_node_provider(load_config(path).provider, "netns")

    def workers():
        return provider.non_terminated_nodes({TAG_RAY_NODE_KIND: NODE_KIND_WORKER})

    time.sleep(1.5)  # a few monitor rounds with no demand
    assert workers() == []

    # Demand that the head (1 CPU) cannot hold: one 2-CPU worker comes up.
    t0 = time.monotonic()
    write_load(load_file, nodes=[{"ip": head.ip, "total": {"CPU": 1}, "available": {"CPU": 0}}],
               demand=[{"CPU": 2}])  # fmt: skip
    (worker,) = wait_for("a worker", workers)
    launched_s = time.monotonic() - t0
    wait_for(
        "the worker to be set up",
        lambda: provider.node_tags(worker).get(TAG_RAY_NODE_STATUS) == STATUS_UP_TO_DATE,
    )
    up_s = time.monotonic() - t0
    worker_host = next(h for h in net.hosts if h.ip == worker)
    assert open(os.path.join(worker_host.home, "worker_started.txt")).read() == f"head={head.ip}\n"
    assert open(os.path.join(worker_host.home, "payload", "data.txt")).read() == "synced"

    # The worker reports in and runs the task; no second worker is launched.
    busy = {"ip": worker, "total": {"CPU": 2}, "available": {"CPU": 0}}
    write_load(load_file, nodes=[busy])
    time.sleep(2)
    assert workers() == [worker]

    # Idle: removed after idle_timeout_minutes (3 s); the head stays.
    t1 = time.monotonic()
    write_load(load_file, nodes=[{**busy, "available": {"CPU": 2}}])
    wait_for("scale-down", lambda: workers() == [], timeout_s=60)
    down_s = time.monotonic() - t1
    assert len(provider.non_terminated_nodes({})) == 1
    log = open(os.path.join(head.home, "monitor.log")).read()
    assert "launching {'worker': 1}" in log and f"terminating ['{worker}']" in log

    pid = int(open(os.path.join(head.home, "monitor.pid")).read())
    os.kill(pid, 15)
    cli(net, "down", path, "--yes")
    print(
        f"\nscale-up: launch decided {launched_s:.2f} s, worker set up {up_s:.2f} s after demand;"
        f" scale-down {down_s:.2f} s after idle (idle timeout 3 s, monitor interval 0.5 s)"
    )
