"""docker/build.sh with a real Docker engine (``BUILDER=docker``), and its deploy image run
on that engine through the Docker SDK (marker ``docker``).

docker/setup_docker.sh installs Debian's docker.io here (idempotent). The module starts a
dockerd of its own: data root, exec root (and so its own containerd), socket, pidfile and an
empty configuration file, all in a temporary folder; overlay2, or vfs where overlay2 does not
start; no bridge, no iptables rules, no IP forwarding (the containers use the host's
network). build.sh builds base-deps and deploy with Debian's 20.10 CLI (``/usr/bin/docker``,
BuildKit built in); then a head and a worker container run a driver that sees both nodes and
runs a task on each. At the end dockerd is stopped by its PID and the folder (with every
image) is unmounted and removed. Not in the default run: ``./ci/test.sh -m docker``. Times
are in docker/README.md.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import tempfile
import time

import psutil
import pytest

pytest.importorskip("docker", reason="pip install docker (ci/requirements-test.txt)")

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(2400)]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCKERD = "/usr/sbin/dockerd"
DOCKER_CLI = "/usr/bin/docker"  # docker.io's 20.10 CLI: BuildKit without the buildx plugin
# The first that starts here is used; RAY_TEST_DOCKERD_DRIVERS=a,b tries others (e.g. "zfs,vfs"
# to exercise the fallback).
STORAGE_DRIVERS = tuple(os.environ.get("RAY_TEST_DOCKERD_DRIVERS", "overlay2,vfs").split(","))


def _mounts_under(folder: str) -> list[str]:
    """Mount points at or below ``folder``, deepest first (mountinfo's 5th field, octal-escaped)."""
    prefix = folder + "/"
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4].encode().decode("unicode_escape") for line in f]
    return sorted({p for p in points if (p + "/").startswith(prefix)}, key=len, reverse=True)


def _processes_using(folder: str) -> list[psutil.Process]:
    """Processes whose command line names ``folder`` (containerd, its shims): only ours do."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if proc.pid != os.getpid() and any(folder + "/" in a for a in proc.info["cmdline"] or []):
            found.append(proc)
    return found


@pytest.fixture(scope="module")
def dockerd(docker_sdk):
    """``(client, socket path, storage driver)`` of a dockerd started here, stopped at the end."""
    if os.geteuid() != 0:
        pytest.skip("the engine test installs and runs dockerd as root (docker/setup_docker.sh)")
    subprocess.run([os.path.join(ROOT, "docker", "setup_docker.sh")], check=True, timeout=900)
    # Short, for containerd's socket paths; removed with everything in it at the end.
    folder = pathlib.Path(tempfile.mkdtemp(prefix="ray-dockerd-"))
    config = folder / "daemon.json"  # so no /etc/docker/daemon.json of the machine applies
    config.write_text("{}\n")
    sock, pidfile = folder / "docker.sock", folder / "dockerd.pid"
    process = client = None
    failures = []
    try:
        for driver in STORAGE_DRIVERS:
            log_path = folder / f"dockerd-{driver}.log"
            with open(log_path, "wb") as log:
                process = subprocess.Popen(
                    [DOCKERD, f"--config-file={config}", f"--data-root={folder}/data",
                     f"--exec-root={folder}/exec", f"--host=unix://{sock}", f"--pidfile={pidfile}",
                     f"--storage-driver={driver}", "--bridge=none", "--iptables=false",
                     "--ip-forward=false", "--ip-masq=false"],
                    stdout=log, stderr=subprocess.STDOUT,
                )  # fmt: skip
            try:
                client = docker_sdk.connect(sock, process, log_path, f"dockerd ({driver})")
                break
            except AssertionError as e:  # this driver does not work here: the next one
                failures.append(str(e)[-2000:])
                docker_sdk.stop(process)
                process = None
                _cleanup(str(folder), keep_logs=True)
        tried = "\n".join(failures)
        assert client is not None, f"dockerd started with none of {STORAGE_DRIVERS}:\n{tried}"
        assert int(pidfile.read_text()) == process.pid
        yield client, str(sock), driver
    finally:
        if client is not None:
            client.close()
        if process is not None:
            docker_sdk.stop(process)  # SIGTERM by its PID; dockerd stops its containerd
        leaked = _cleanup(str(folder), keep_logs=False)
    assert not leaked, f"left running after dockerd stopped (killed now): {leaked}"


def _cleanup(folder: str, keep_logs: bool) -> list[str]:
    """Kill what still runs from ``folder``, unmount everything under it and remove it (the
    data root with every image), or only what a retry with another storage driver must not
    find (``keep_logs``). Returns the command lines it had to kill."""
    leaked = []
    deadline = time.monotonic() + 30
    while (procs := _processes_using(folder)) and time.monotonic() < deadline:
        time.sleep(0.5)  # containerd and its shims exit shortly after dockerd
    for proc in procs:
        try:
            leaked.append(" ".join(proc.cmdline())[:200])
            proc.kill()
            proc.wait(10)
        except psutil.Error:
            pass
    # libnetwork's bind mount of the host network namespace (exec/netns/default), and any
    # overlay a crash left mounted.
    for point in _mounts_under(folder):
        subprocess.run(["umount", point], check=False, timeout=60)
    assert not _mounts_under(folder), _mounts_under(folder)
    if not keep_logs:
        shutil.rmtree(folder)
        return leaked
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif not name.endswith((".log", ".json")):
            os.unlink(path)
    return leaked


@pytest.fixture(scope="module")
def built(dockerd):
    """Runs ``BUILDER=docker docker/build.sh base-deps deploy`` against the engine (a cold
    build: the data root is new). Returns the build's output and the seconds it took."""
    _, sock, _ = dockerd
    start = time.monotonic()
    done = _build(sock)
    took = time.monotonic() - start
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-6000:]
    print(f"\nBUILDER=docker build.sh base-deps deploy, cold: {took:.1f} s")
    return done.stdout + done.stderr, took


def _build(sock: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "BUILDER": "docker", "DOCKER": DOCKER_CLI, "DOCKER_HOST": f"unix://{sock}"}
    return subprocess.run([os.path.join(ROOT, "docker", "build.sh"), "base-deps", "deploy"],
                          env=env, capture_output=True, text=True, timeout=2000)  # fmt: skip


def test_build_sh_builds_base_deps_and_deploy_with_buildkit(dockerd, built, docker_sdk):
    client, sock, driver = dockerd
    output, _ = built
    version = client.version()
    engine = next(c for c in version["Components"] if c["Name"] == "Engine")
    assert engine["Version"].startswith("20.10."), version  # Debian 12's docker.io
    assert client.info()["Driver"] == driver
    # BuildKit's progress output (the legacy builder would print "Successfully tagged"),
    # which the Dockerfiles' RUN --mount needs.
    assert "naming to localhost/ray/deploy:dev" in output, output[-3000:]
    tag = docker_sdk.ray_version()
    for name in ("base-deps", "deploy"):
        image = client.images.get(f"localhost/ray/{name}:dev")
        assert f"localhost/ray/{name}:{tag}" in image.tags, image.tags
    assert client.images.get("localhost/debian-base:bookworm")  # made with mmdebstrap
    config = client.images.get("localhost/ray/deploy:dev").attrs["Config"]
    assert config["Entrypoint"] == ["tini", "--", "ray", "start", "--block"]
    assert config["Cmd"] == ["--head"]
    # A second run finds the base image (`docker image inspect`) and base-deps' layers cached.
    # (Not deploy: its layers are keyed on packages/, which may change while this runs.)
    names = ("localhost/debian-base:bookworm", "localhost/ray/base-deps:dev")
    ids = {n: client.images.get(n).id for n in names}
    start = time.monotonic()
    again = _build(sock)
    assert again.returncode == 0, again.stdout[-4000:] + again.stderr[-4000:]
    assert ids == {n: client.images.get(n).id for n in names}
    print(f"warm rebuild: {time.monotonic() - start:.1f} s; storage driver {driver}")
    # The engine's own data: nothing outside the test's folder.
    assert client.info()["DockerRootDir"] == os.path.join(os.path.dirname(sock), "data")


def test_deploy_image_runs_a_head_and_a_worker_on_the_engine(dockerd, built, docker_sdk):
    client, _, _ = dockerd
    took = docker_sdk.run_cluster(client, workers=1)
    print(f"\nhead + worker containers on dockerd: {took:.1f} s")
