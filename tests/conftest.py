"""Shared by the repository-level tests."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import uuid

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class WheelBuilder:
    """Builds our distributions' wheels once per session, from a copy of each package
    (setuptools writes ``build/`` next to the sources; the checkout stays clean)."""

    def __init__(self, workdir):
        self._src, self._out = workdir / "src", workdir / "wheels"
        self._src.mkdir()
        self._out.mkdir()
        self._built: dict[str, str] = {}

    def __call__(self, *names: str) -> dict[str, str]:
        """``{distribution: wheel path}`` for ``names`` (e.g. ``"ray-core"``)."""
        missing = [n for n in names if n not in self._built]
        if missing:
            ignore = shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__", "tests")
            for name in missing:
                shutil.copytree(os.path.join(ROOT, "packages", name), self._src / name, ignore=ignore)
            done = subprocess.run(
                [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                 "--disable-pip-version-check", "-w", str(self._out), *[str(self._src / n) for n in missing]],
                capture_output=True, text=True, timeout=300,
            )  # fmt: skip
            assert done.returncode == 0, f"pip wheel {missing} failed:\n{done.stdout}\n{done.stderr}"
            for name in missing:
                shutil.rmtree(self._src / name)
            for wheel in os.listdir(self._out):
                dist = wheel.split("-")[0].replace("_", "-")
                self._built.setdefault(dist, str(self._out / wheel))
        return {n: self._built[n] for n in names}


@pytest.fixture(scope="session")
def build_wheels(tmp_path_factory):
    return WheelBuilder(tmp_path_factory.mktemp("ray-wheels"))


@pytest.fixture(scope="session")
def podman_images():
    """The images of docker/build.sh in podman's storage (marker ``docker`` tests).

    docker/setup_podman.sh first installs and configures podman (idempotent; needs root),
    then build.sh builds base-deps, deploy and examples, reusing cached layers. Returns
    the seconds the build took."""
    if os.geteuid() != 0:
        pytest.skip("the image tests install and run podman as root (docker/setup_podman.sh)")
    subprocess.run([os.path.join(ROOT, "docker", "setup_podman.sh")], check=True, timeout=900)
    start = time.monotonic()
    subprocess.run([os.path.join(ROOT, "docker", "build.sh")], check=True, timeout=2400)
    return time.monotonic() - start


class DockerSdk:
    """What the tests that drive a container engine through the Python ``docker`` SDK share
    (marker ``docker``): tests/test_docker_images.py on podman's API service and
    tests/test_docker_engine.py on a dockerd of its own. Given by the ``docker_sdk``
    fixture; the ``docker`` package is imported only when a client is made."""

    @staticmethod
    def ray_version() -> str:
        with open(os.path.join(ROOT, "packages", "ray-core", "src", "ray", "__init__.py")) as f:
            return re.search(r'^__version__ = "(.*)"$', f.read(), re.M).group(1)

    @staticmethod
    def host_ip() -> str:
        """The address ray nodes on the host network register with (UDP connect sends nothing)."""
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))
            return s.getsockname()[0]

    @staticmethod
    def free_port() -> int:
        with socket.socket() as s:
            s.bind(("", 0))
            return s.getsockname()[1]

    @staticmethod
    def connect(sock, process: subprocess.Popen, log_path, what: str, timeout_s: float = 120):
        """A ``docker.DockerClient`` on ``unix://sock`` once the engine ``process`` answers
        there; fails with the engine's log if the process exits first."""
        import docker  # noqa: I001 (docker first: it says what is missing)
        import requests

        deadline = time.monotonic() + timeout_s
        while True:
            try:  # the client asks the engine for its API version as it is made
                client = docker.DockerClient(base_url=f"unix://{sock}", timeout=600)
                client.ping()
                return client
            except (docker.errors.DockerException, requests.exceptions.ConnectionError):  # not up yet
                assert process.poll() is None, f"{what} exited:\n{open(log_path).read()[-4000:]}"
                assert time.monotonic() < deadline, f"{what} did not answer in {timeout_s} s"
                time.sleep(0.2)

    @staticmethod
    def stop(process: subprocess.Popen, timeout_s: float = 60) -> None:
        """SIGTERM to the engine we started (by its PID), SIGKILL if it does not exit."""
        if process.poll() is None:
            process.terminate()
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)

    @staticmethod
    def wait_for_log(container, text: str, timeout_s: float = 120) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            logs = container.logs().decode(errors="replace")
            if text in logs:
                return
            container.reload()
            assert container.status in ("created", "running"), f"{container.name} exited:\n{logs}"
            assert time.monotonic() < deadline, f"{container.name}: no {text!r} in {timeout_s} s:\n{logs}"
            time.sleep(0.5)

    @classmethod
    def run_cluster(cls, client, workers: int, image: str = "localhost/ray/deploy:dev") -> float:
        """A head and ``workers`` worker containers of ``image`` (host network, 1 GB of
        shared memory); a driver run in the head with ``exec_run`` sees every node, pins a
        task to each node by a custom resource and moves objects through the store; each
        container's log shows its ``ray start`` line; then every container is removed and
        none is left with this run's label. Returns the seconds it took."""
        run = uuid.uuid4().hex[:8]
        label = f"ray-test={run}"
        ip, port = cls.host_ip(), cls.free_port()
        # Containers share no files: workers and the driver get the cluster secret explicitly.
        secret = "sdk-" + uuid.uuid4().hex
        common = ["--num-cpus=1", "--object-store-memory=200000000", f"--redis-password={secret}"]
        options = dict(detach=True, network_mode="host", shm_size="1g", labels={"ray-test": run})
        tags = ["head"] + [f"w{i}" for i in range(1, workers + 1)]
        started = time.monotonic()
        try:
            head = client.containers.run(image, name=f"ray-head-{run}",
                                         command=["--head", f"--redis-port={port}", *common,
                                                  '--resources={"head": 1}'], **options)  # fmt: skip
            cls.wait_for_log(head, "Started ray on this node (head)")
            nodes = [
                client.containers.run(image, name=f"ray-worker{tag[1:]}-{run}",
                                      command=[f"--address={ip}:{port}", *common,
                                               f'--resources={{"{tag}": 1}}'], **options)  # fmt: skip
                for tag in tags[1:]
            ]
            for w in nodes:
                cls.wait_for_log(w, f"joined the cluster at {ip}:{port}")
            driver = f"""
import time, ray
ray.init(address="{ip}:{port}", redis_password="{secret}")
deadline = time.time() + 120
while len([n for n in ray.nodes() if n["Alive"]]) < {len(tags)} and time.time() < deadline:
    time.sleep(0.2)
@ray.remote(num_cpus=0)
def where(tag):
    return tag, ray.get_runtime_context().get_node_id()
found = ray.get([where.options(resources={{r: 1}}).remote(r) for r in {tags!r}])
objects = ray.get([ray.put(bytes(10**6)) for _ in range(3)])  # through the object store
print("NODES", len([n for n in ray.nodes() if n["Alive"]]), len({{node for _, node in found}}),
      sum(map(len, objects)))
"""
            code, out = head.exec_run(["python", "-c", driver])
            text = out.decode(errors="replace")
            assert code == 0, text
            assert re.search(rf"^NODES {len(tags)} {len(tags)} 3000000$", text, re.M), text
            # Each node's log, read through the API.
            assert f"The cluster address is {ip}:{port}" in head.logs().decode()
            for w in nodes:
                assert f"joined the cluster at {ip}:{port}" in w.logs().decode()
            return time.monotonic() - started
        finally:
            for c in client.containers.list(all=True, filters={"label": label}):
                c.remove(force=True)
            assert client.containers.list(all=True, filters={"label": label}) == []


@pytest.fixture(scope="session")
def docker_sdk():
    return DockerSdk
