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


def _profile() -> str:
    """The driver's environment for the hosts' login shells (same checkout, same venv)."""
    line = f"export PATH={os.path.dirname(PY)}:$PATH"
    if os.environ.get("PYTHONPATH"):
        line += f"; export PYTHONPATH={os.environ['PYTHONPATH']}"
    return line


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
            f"echo '{_profile()}' > ~/.profile",
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


def _ray_cli() -> list[str]:
    """ray-core's `ray` (which loads our commands from the ray.cli entry points), else ours."""
    ray_bin = os.path.join(os.path.dirname(PY), "ray")
    if os.path.exists(ray_bin) and _core_cli_available():
        return [ray_bin]
    return [PY, "-m", "ray.autoscaler"]


def cli(net, *args, timeout_s=300):
    done = net.run_driver([*_ray_cli(), *map(str, args)], timeout_s=timeout_s)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.slow
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


def wait_for(what, predicate, timeout_s=240):
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.2)


@pytest.mark.slow
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
    wait_for("scale-down", lambda: workers() == [], timeout_s=120)
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


def _core_cli_available() -> bool:
    try:
        from ray.scripts import cli  # ray-core's `ray start/stop`
    except ImportError:
        return False
    return hasattr(cli, "start") and hasattr(cli, "stop")


CLUSTER_SCRIPT = """
import socket, sys, time
import ray

ray.init(address="auto")
deadline = time.time() + 60
while len([n for n in ray.nodes() if n["Alive"]]) < {n_nodes} and time.time() < deadline:
    time.sleep(0.5)


@ray.remote(num_cpus=1)
def where():
    time.sleep(0.3)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect(("{head_ip}", 6379))
    return s.getsockname()[0]


print("NODES", sorted(n["NodeManagerAddress"] for n in ray.nodes() if n["Alive"]))
print("TASK_IPS", sorted(set(ray.get([where.remote() for _ in range(30)]))))
ray.shutdown()
"""


def processes_in(namespace: str) -> list[str]:
    import subprocess

    pids = subprocess.run(
        ["ip", "netns", "pids", namespace], capture_output=True, text=True, timeout=30
    ).stdout.split()
    out = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if cmd and "sshd" not in cmd:
            out.append(cmd)
    return out


@pytest.mark.slow
@pytest.mark.skipif(not _core_cli_available(), reason="needs ray-core's `ray start`")
def test_ray_up_starts_a_real_cluster_a_submitted_script_sees_every_node_and_down_cleans_up(
    net, tmp_path
):
    head, *workers = net.hosts
    path, load_file = cluster_yaml(
        net,
        tmp_path,
        min_workers=2,
        head_start_ray_commands=[
            "ray stop",
            # ray-core's `ray start --head --autoscaling-config` starts the monitor.
            "ray start --head --port=6379 --num-cpus=1"
            " --autoscaling-config=$HOME/ray_bootstrap_config.yaml",
        ],
        worker_start_ray_commands=[
            "ray stop",
            "ray start --address=$RAY_HEAD_IP:6379 --num-cpus=2",
        ],
    )
    write_load(load_file)
    t0 = time.monotonic()
    cli(net, "up", path, "--yes")
    provider = get_node_provider(load_config(path).provider, "netns")

    def ready_workers():
        nodes = provider.non_terminated_nodes({TAG_RAY_NODE_KIND: NODE_KIND_WORKER})
        up = [
            n for n in nodes if provider.node_tags(n).get(TAG_RAY_NODE_STATUS) == STATUS_UP_TO_DATE
        ]
        return len(up) == 2

    wait_for("min_workers=2 to come up", ready_workers, timeout_s=240)
    up_s = time.monotonic() - t0
    script = tmp_path / "sees_every_node.py"
    script.write_text(CLUSTER_SCRIPT.format(n_nodes=3, head_ip=head.ip))
    out = cli(net, "submit", path, script)
    lines = {
        line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in out.splitlines() if " " in line
    }
    all_ips = sorted(h.ip for h in net.hosts)
    assert lines["NODES"] == str(all_ips), out
    assert len(eval(lines["TASK_IPS"])) >= 2, out  # tasks ran on more than one machine

    cli(net, "down", path, "--yes")
    assert provider.non_terminated_nodes({}) == []
    wait_for(
        "every Ray process (and the monitor) to exit",
        lambda: all(not processes_in(h.namespace) for h in net.hosts),
        timeout_s=60,
    )
    print(f"\nray up + 2 workers via the monitor, real ray start: {up_s:.1f} s")


def _core_publishes_load() -> bool:
    try:
        import ray.state
    except ImportError:
        return False
    return hasattr(ray.state, "cluster_load")


DEMAND_SCRIPT = """
import time
import ray

ray.init(address="auto")


@ray.remote(num_cpus=2)
def needs_two_cpus():
    time.sleep(1)
    return "done"


# The head has 1 CPU: these queue until the autoscaler adds a 2-CPU worker.
print("RESULTS", ray.get([needs_two_cpus.remote() for _ in range(2)]))
ray.shutdown()
"""


@pytest.mark.slow
@pytest.mark.extended  # about 2 min; the default run keeps the one-host up/down test below
@pytest.mark.skipif(
    not (_core_cli_available() and _core_publishes_load()),
    reason="needs ray-core's `ray start` and ray.state.cluster_load()",
)
def test_real_cluster_scales_up_for_queued_tasks_and_down_when_idle(net, tmp_path):
    path, _ = cluster_yaml(
        net,
        tmp_path,
        head_start_ray_commands=[
            "ray stop",
            "ray start --head --port=6379 --num-cpus=1"
            " --autoscaling-config=~/ray_bootstrap_config.yaml",
            "nohup python -m ray.autoscaler.monitor --autoscaling-config ~/ray_bootstrap_config.yaml"
            " --redis-address $RAY_HEAD_IP:6379 --interval-s 0.5 --log-file ~/monitor.log"
            " > /dev/null 2>&1 < /dev/null &",
        ],
        worker_start_ray_commands=[
            "ray stop",
            "ray start --address=$RAY_HEAD_IP:6379 --num-cpus=2",
        ],
    )
    cli(net, "up", path, "--yes")
    provider = get_node_provider(load_config(path).provider, "netns")

    def workers():
        return provider.non_terminated_nodes({TAG_RAY_NODE_KIND: NODE_KIND_WORKER})

    assert workers() == []
    script = tmp_path / "demand.py"
    script.write_text(DEMAND_SCRIPT)
    t0 = time.monotonic()
    out = cli(net, "submit", path, script, timeout_s=300)
    assert "RESULTS ['done', 'done']" in out
    scale_up_s = time.monotonic() - t0
    assert len(workers()) >= 1
    t1 = time.monotonic()
    wait_for("idle workers to be removed", lambda: workers() == [], timeout_s=120)
    scale_down_s = time.monotonic() - t1
    cli(net, "down", path, "--yes")
    print(
        f"\nreal cluster: queued tasks done {scale_up_s:.1f} s after submit (incl. a worker"
        f" launch); idle worker removed {scale_down_s:.1f} s later (idle timeout 3 s)"
    )
