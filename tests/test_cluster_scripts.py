"""docker/cluster/ray-cluster.sh: a manual cluster driven by parallel-ssh (``multinode``).

Hosts are network namespaces running real sshd (the autoscaler's harness,
``packages/ray-autoscaler/tests/autoscaler_netns.py``). h1 is the head: the script
runs there, as the 0.2 docs run everything from the head, and reaches h2 and h3 with
Debian's ``parallel-ssh`` through ``workers.txt``.

What "install" means here: each host starts like a machine image with Ray's
third-party dependencies but no Ray: an empty virtualenv whose ``deps.pth`` points
at the test venv's site-packages (the namespaces share one filesystem; its editable
ray packages are not activated, because a path in a .pth is not a site dir). The
script then really pip-installs wheels built from this checkout (ray-plasma,
ray-core, ray-autoscaler; ``--no-deps --no-index``) into every host's venv, and
the cluster runs from those installs.

The Docker variant (``docker`` marker) runs the same hosts with podman: a head
container and two worker containers of ``localhost/ray/deploy:dev`` with
``--net=host`` inside the namespaces.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import site
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "docker", "cluster", "ray-cluster.sh")


def _load_harness():
    path = os.path.join(ROOT, "packages", "ray-autoscaler", "tests", "autoscaler_netns.py")
    spec = importlib.util.spec_from_file_location("autoscaler_netns", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("autoscaler_netns", module)
    spec.loader.exec_module(module)
    return module


netns = _load_harness()


def _pssh_missing() -> str | None:
    reason = netns.netns_available()
    if reason:
        return reason
    if not (shutil.which("parallel-ssh") or shutil.which("pssh")):
        return "parallel-ssh is not installed (apt-get install pssh; ci/system_deps.sh does it)"
    return None


pytestmark = [
    pytest.mark.multinode,
    pytest.mark.skipif(_pssh_missing() is not None, reason=_pssh_missing() or ""),
]

SSH_OPTIONS = "StrictHostKeyChecking=no UserKnownHostsFile=/dev/null BatchMode=yes LogLevel=ERROR"
START_ARGS = "--num-cpus=1 --object-store-memory=100000000"

DRIVER = """
import os, sys, time, ray
ray.init(address=sys.argv[1],
         redis_password=open(os.path.expanduser("~/.ray-cluster-password")).read().strip())
want = int(sys.argv[2])
deadline = time.time() + 60
while len([n for n in ray.nodes() if n["Alive"]]) < want and time.time() < deadline:
    time.sleep(0.2)
alive = sorted(n["NodeManagerAddress"] for n in ray.nodes() if n["Alive"])

@ray.remote(num_cpus=1)
def where():
    from ray.util import get_node_ip_address
    time.sleep(0.3)
    return get_node_ip_address()

seen = set()
while len(seen) < want and time.time() < deadline:
    seen |= set(ray.get([where.remote() for _ in range(3 * want)]))
print("ALIVE", " ".join(alive))
print("RAN_ON", " ".join(sorted(seen)))
print("RAY_FROM", ray.__file__)
ray.shutdown()
"""


@pytest.fixture(scope="module")
def wheels(build_wheels):
    return sorted(build_wheels("ray-plasma", "ray-core", "ray-autoscaler").values())


@pytest.fixture
def net():
    with netns.NetnsHosts(n_hosts=3) as hosts:
        tag = hosts.tag
        yield hosts
    assert netns.NetnsHosts.leftover_namespaces(tag) == [], "namespaces left behind"


def _machine_image(host) -> None:
    """A host "image": Python plus Ray's dependencies, no Ray (see the module docstring)."""
    venv = os.path.join(host.home, "ray-venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True, timeout=120)
    purelib = subprocess.run(
        [os.path.join(venv, "bin", "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    with open(os.path.join(purelib, "deps.pth"), "w") as f:
        f.write(site.getsitepackages()[0] + "\n")


def _cluster(net, head, env: dict, *args: str, timeout_s: float = 180):
    """Run ray-cluster.sh on the head host over ssh, from its home directory."""
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    cmd = f"cd ~ && env {exports} {shlex.quote(SCRIPT)} " + " ".join(map(shlex.quote, args))
    return net.ssh(head, cmd, timeout_s=timeout_s)


def _ok(done):
    assert done.returncode == 0, f"rc={done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _ray_processes(net) -> dict[str, list[str]]:
    found = {}
    for host in net.hosts:
        pids = subprocess.run(["ip", "netns", "pids", host.namespace], capture_output=True,
                              text=True, timeout=30).stdout.split()  # fmt: skip
        cmds = []
        for pid in pids:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if "ray" in cmd and "sshd" not in cmd:
                cmds.append(cmd)
        found[host.ip] = cmds
    return found


def test_pssh_scripts_install_start_run_tasks_and_stop_a_namespace_cluster(net, wheels):
    head, *workers = net.hosts
    with open(os.path.join(head.home, "workers.txt"), "w") as f:
        f.write("# the workers (head excluded)\n" + "".join(f"{w.ip}\n" for w in workers))
    for host in net.hosts:
        _machine_image(host)
    env = {
        "SSH_KEY": net.key_path, "SSH_OPTIONS": SSH_OPTIONS, "RAY_VENV": "~/ray-venv",
        "RAY_INSTALL": " ".join(wheels), "PIP_ARGS": "--no-index --no-deps",
        "RAY_START_ARGS": START_ARGS, "REDIS_PORT": "6379",
    }  # fmt: skip
    times = {}
    t0 = time.monotonic()
    out = _ok(_cluster(net, head, env, "check"))
    assert all(f"{w.ip}: ok:" in out for w in workers), out

    t = time.monotonic()
    out = _ok(_cluster(net, head, env, "install"))
    times["install"] = time.monotonic() - t
    for host in net.hosts:  # the installed copy, not the checkout's editable one
        site_dir = os.path.join(host.home, "ray-venv", "lib")
        assert any("ray_core-0.7.0.dist-info" in os.listdir(os.path.join(site_dir, d, "site-packages"))
                   for d in os.listdir(site_dir)), host  # fmt: skip
    assert out.count("[SUCCESS]") == len(workers), out

    t = time.monotonic()
    out = _ok(_cluster(net, head, env, "up"))
    times["up"] = time.monotonic() - t
    assert f"cluster address: {head.ip}:6379; the cluster secret" in out, out
    assert os.stat(os.path.join(head.home, ".ray-cluster-password")).st_mode & 0o077 == 0

    t = time.monotonic()
    driver = net.ssh(head, f"~/ray-venv/bin/python -c {shlex.quote(DRIVER)} {head.ip}:6379 3",
                     timeout_s=120)  # fmt: skip
    times["driver"] = time.monotonic() - t
    lines = dict(line.split(" ", 1) for line in _ok(driver).splitlines() if " " in line)
    ips = sorted(h.ip for h in net.hosts)
    assert lines["ALIVE"].split() == ips, driver.stdout
    assert lines["RAN_ON"].split() == ips, driver.stdout
    assert lines["RAY_FROM"].startswith(os.path.join(head.home, "ray-venv")), lines["RAY_FROM"]
    assert all(_ray_processes(net).values()), "every host runs ray processes"

    # parallel-rsync of an app directory (hosts share one filesystem: one destination).
    app = os.path.join(head.home, "app")
    os.makedirs(app)
    with open(os.path.join(app, "job.py"), "w") as f:
        f.write("print('hi')\n")
    dest = os.path.join(net.workdir, "synced")
    out = _ok(_cluster(net, head, env, "sync", app, dest))
    assert out.count("[SUCCESS]") == len(workers), out
    assert open(os.path.join(dest, "app", "job.py")).read() == "print('hi')\n"

    t = time.monotonic()
    out = _ok(_cluster(net, head, env, "down"))
    times["down"] = time.monotonic() - t
    assert out.count("Stopped") == 3, out
    assert _ray_processes(net) == {h.ip: [] for h in net.hosts}, "ray processes left running"
    times["total"] = time.monotonic() - t0
    print("\nray-cluster.sh over parallel-ssh, 3 netns hosts:",
          ", ".join(f"{k} {v:.1f} s" for k, v in times.items()))  # fmt: skip


def test_bad_input_is_a_clear_error(net, tmp_path):
    head = net.hosts[0]
    env = {"SSH_KEY": net.key_path, "SSH_OPTIONS": SSH_OPTIONS}
    done = _cluster(net, head, env, "up")  # no workers.txt in the head's home
    assert done.returncode == 2 and "no workers file 'workers.txt'" in done.stderr
    with open(os.path.join(head.home, "workers.txt"), "w") as f:
        f.write("10.200.0.99\n")  # nobody there
    done = _cluster(net, head, {**env, "SSH_OPTIONS": SSH_OPTIONS + " ConnectTimeout=2"}, "check")
    assert done.returncode == 2 and "10.200.0.99: FAILED" in done.stdout, done.stdout
    done = _cluster(net, head, env, "sync", "/tmp", "relative/dest")
    assert done.returncode == 2 and "must be an absolute path" in done.stderr
    done = _cluster(net, head, env, "frobnicate")
    assert done.returncode == 2 and "unknown command 'frobnicate'" in done.stderr
    # A worker without ray on its PATH says so instead of failing obscurely.
    with open(os.path.join(head.home, "workers.txt"), "w") as f:
        f.write(f"{net.hosts[1].ip}\n")
    done = _cluster(net, head, {**env, "RAY_BIN": "/nonexistent"}, "down")
    assert done.returncode != 0 and "no 'ray' command" in done.stdout + done.stderr


@pytest.fixture(scope="module")
def deploy_image():
    if shutil.which("podman") is None or shutil.which("mmdebstrap") is None:
        pytest.skip("needs podman and mmdebstrap (apt-get install podman buildah runc mmdebstrap)")
    t0 = time.monotonic()
    subprocess.run([os.path.join(ROOT, "docker", "build.sh"), "base-deps", "deploy"],
                   check=True, timeout=1500)  # fmt: skip
    print(f"\nbase-deps + deploy images built in {time.monotonic() - t0:.1f} s")
    return "localhost/ray/deploy:dev"


@pytest.mark.docker
@pytest.mark.timeout(1800)
def test_docker_variant_runs_head_and_worker_containers_in_namespaces(net, deploy_image):
    head, *workers = net.hosts
    with open(os.path.join(head.home, "workers.txt"), "w") as f:
        f.write("".join(f"{w.ip}\n" for w in workers))
    # `ip netns exec` mounts a fresh /sys for the namespace, which hides /sys/fs/cgroup
    # from the hosts' sshd sessions (runc: "no cgroup mount found"); a real host has it.
    # So the hosts' podman runs in the machine's (this test's) mount namespace, still in the host's
    # network namespace (nsenter --mount changes nothing else): --net=host is the host's.
    podman = os.path.join(net.workdir, "podman")
    with open(podman, "w") as f:
        f.write(f'#!/bin/sh\nexec nsenter --mount=/proc/{os.getpid()}/ns/mnt -- podman "$@"\n')
    os.chmod(podman, 0o755)
    env = {
        "SSH_KEY": net.key_path, "SSH_OPTIONS": SSH_OPTIONS, "DOCKER": podman,
        "RAY_IMAGE": deploy_image, "SHM_SIZE": "512m", "RAY_START_ARGS": START_ARGS,
    }  # fmt: skip
    names = [f"ray-node-{h.ip}" for h in net.hosts]
    times = {}
    try:
        t0 = time.monotonic()
        out = _ok(_cluster(net, head, env, "docker-install"))
        assert out.count(f"{deploy_image}: present") == 3, out
        out = _ok(_cluster(net, head, env, "docker-up"))
        times["up"] = time.monotonic() - t0
        assert all(f"{name}: running" in out for name in names), out
        password = open(os.path.join(head.home, ".ray-cluster-password")).read().strip()
        code = DRIVER.replace(
            'open(os.path.expanduser("~/.ray-cluster-password")).read().strip()', repr(password)
        )
        t = time.monotonic()
        driver = net.ssh(head, f"{podman} exec ray-node-{head.ip} python -c {shlex.quote(code)} "
                               f"{head.ip}:6379 3", timeout_s=180)  # fmt: skip
        times["driver"] = time.monotonic() - t
        lines = dict(line.split(" ", 1) for line in _ok(driver).splitlines() if " " in line)
        ips = sorted(h.ip for h in net.hosts)
        assert lines["ALIVE"].split() == ips, driver.stdout
        assert lines["RAN_ON"].split() == ips, driver.stdout
        t = time.monotonic()
        out = _ok(_cluster(net, head, env, "docker-down"))
        times["down"] = time.monotonic() - t
        assert all(f"{name}: stopped and removed" in out for name in names), out
        left = subprocess.run(["podman", "ps", "-aq", "--filter", f"name=ray-node-{netns.SUBNET}"],
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert left.stdout.strip() == "", "containers left behind"
        print("\nray-cluster.sh docker variant, 3 netns hosts:",
              ", ".join(f"{k} {v:.1f} s" for k, v in times.items()))  # fmt: skip
    finally:
        subprocess.run(["podman", "rm", "-f", "-t", "0", *names], capture_output=True, timeout=120)
