"""The images, and a head + two worker containers, driven through the Docker SDK (marker
``docker``).

The engine is podman's Docker-compatible API service (``podman system service``), which
the module starts on a socket of its own and stops at the end; the Python ``docker`` SDK
talks to it as it would to a Docker engine. docker/setup_podman.sh installs podman here
(idempotent) and docker/build.sh builds the images into podman's storage, which the
service serves. Not in the default run: ``./ci/test.sh -m docker``. Times are in
docker/README.md.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
import uuid

import pytest

docker = pytest.importorskip("docker", reason="pip install docker (ci/requirements-test.txt)")
requests = pytest.importorskip("requests")  # the docker SDK's transport

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(3000)]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _version() -> str:
    with open(os.path.join(ROOT, "packages", "ray-core", "src", "ray", "__init__.py")) as f:
        return re.search(r'^__version__ = "(.*)"$', f.read(), re.M).group(1)


def _host_ip() -> str:
    """The address ray nodes on the host network register with (UDP connect sends nothing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("10.255.255.255", 1))
        return s.getsockname()[0]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def engine(podman_images, tmp_path_factory):
    """A Docker SDK client on podman's API service, started here and stopped at the end."""
    folder = tmp_path_factory.mktemp("podman-api")
    sock = folder / "podman.sock"
    log = open(folder / "service.log", "wb")
    service = subprocess.Popen(["podman", "system", "service", "--time=0", f"unix://{sock}"],
                               stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    client = None
    try:
        deadline = time.monotonic() + 120
        while client is None:
            try:  # the client asks the service for its API version as it is made
                client = docker.DockerClient(base_url=f"unix://{sock}", timeout=600)
                client.ping()
            except (docker.errors.DockerException, requests.exceptions.ConnectionError):  # not up yet
                client = None
                assert service.poll() is None, (folder / "service.log").read_text()
                assert time.monotonic() < deadline, "podman system service did not answer in 120 s"
                time.sleep(0.2)
        yield client
    finally:
        if client is not None:
            client.close()
        service.terminate()
        try:
            service.wait(30)
        except subprocess.TimeoutExpired:
            service.kill()
            service.wait(10)
        log.close()


def test_the_api_serves_the_built_images(engine):
    version = engine.version()
    assert any(c.get("Name") == "Podman Engine" for c in version.get("Components", [])), version
    tag = _version()
    for name in ("base-deps", "deploy", "examples"):
        image = engine.images.get(f"localhost/ray/{name}:dev")
        assert f"localhost/ray/{name}:{tag}" in image.tags, image.tags
    deploy = engine.images.get("localhost/ray/deploy:dev").attrs["Config"]
    assert deploy["Entrypoint"] == ["tini", "--", "ray", "start", "--block"]
    assert deploy["Cmd"] == ["--head"]


def test_head_and_two_worker_containers_run_tasks_on_every_node(engine):
    run = uuid.uuid4().hex[:8]
    labels = {"ray-test": run}
    ip, port = _host_ip(), _free_port()
    # Containers share no files: workers and the driver get the cluster secret explicitly.
    secret = "sdk-" + uuid.uuid4().hex
    common = ["--num-cpus=1", "--object-store-memory=200000000", f"--redis-password={secret}"]
    options = dict(detach=True, network_mode="host", shm_size="1g", labels=labels)
    started = time.monotonic()
    try:
        head = engine.containers.run("localhost/ray/deploy:dev", name=f"ray-head-{run}",
                                     command=["--head", f"--redis-port={port}", *common,
                                              '--resources={"head": 1}'], **options)  # fmt: skip
        _wait_for_log(head, "Started ray on this node (head)")
        workers = [
            engine.containers.run("localhost/ray/deploy:dev", name=f"ray-worker{i}-{run}",
                                  command=[f"--address={ip}:{port}", *common,
                                           f'--resources={{"w{i}": 1}}'], **options)  # fmt: skip
            for i in (1, 2)
        ]
        for w in workers:
            _wait_for_log(w, f"joined the cluster at {ip}:{port}")
        driver = f"""
import time, ray
ray.init(address="{ip}:{port}", redis_password="{secret}")
deadline = time.time() + 120
while len([n for n in ray.nodes() if n["Alive"]]) < 3 and time.time() < deadline:
    time.sleep(0.2)
@ray.remote(num_cpus=0)
def where(tag):
    return tag, ray.get_runtime_context().get_node_id()
found = ray.get([where.options(resources={{r: 1}}).remote(r) for r in ("head", "w1", "w2")])
objects = ray.get([ray.put(bytes(10**6)) for _ in range(3)])  # through the object store
print("NODES", len([n for n in ray.nodes() if n["Alive"]]), len({{node for _, node in found}}),
      sum(map(len, objects)))
"""
        code, out = head.exec_run(["python", "-c", driver])
        text = out.decode(errors="replace")
        assert code == 0, text
        assert re.search(r"^NODES 3 3 3000000$", text, re.M), text
        # Each node's log, read through the API.
        assert f"The cluster address is {ip}:{port}" in head.logs().decode()
        for w in workers:
            assert f"joined the cluster at {ip}:{port}" in w.logs().decode()
        print(f"three-container cluster: {time.monotonic() - started:.1f} s")
    finally:
        for c in engine.containers.list(all=True, filters={"label": f"ray-test={run}"}):
            c.remove(force=True)
    assert engine.containers.list(all=True, filters={"label": f"ray-test={run}"}) == []


def test_examples_image_runs_a_job_with_every_package(engine):
    job = """
import ray, ray.rllib, ray.sgd, ray.tune, torch
ray.init(num_cpus=1)
@ray.remote
def norm(n):
    return float(torch.ones(n).norm() ** 2)
print("JOB", ray.get(norm.remote(16)), torch.__version__)
"""
    out = engine.containers.run("localhost/ray/examples:dev", ["python", "-c", job],
                                network_mode="host", shm_size="1g", remove=True,
                                labels={"ray-test": "examples"})  # fmt: skip
    assert re.search(r"^JOB 16.0 2\.13\.0", out.decode(), re.M), out.decode()


def _wait_for_log(container, text: str, timeout_s: float = 120):
    deadline = time.monotonic() + timeout_s
    while True:
        logs = container.logs().decode(errors="replace")
        if text in logs:
            return
        container.reload()
        assert container.status in ("created", "running"), f"{container.name} exited:\n{logs}"
        assert time.monotonic() < deadline, f"{container.name}: no {text!r} in {timeout_s} s:\n{logs}"
        time.sleep(0.5)
