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

import re
import subprocess

import pytest

pytest.importorskip("docker", reason="pip install docker (ci/requirements-test.txt)")

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(3000)]


@pytest.fixture(scope="module")
def engine(podman_images, tmp_path_factory, docker_sdk):
    """A Docker SDK client on podman's API service, started here and stopped at the end."""
    folder = tmp_path_factory.mktemp("podman-api")
    sock, log_path = folder / "podman.sock", folder / "service.log"
    with open(log_path, "wb") as log:
        service = subprocess.Popen(["podman", "system", "service", "--time=0", f"unix://{sock}"],
                                   stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    client = None
    try:
        client = docker_sdk.connect(sock, service, log_path, "podman system service")
        yield client
    finally:
        if client is not None:
            client.close()
        docker_sdk.stop(service, timeout_s=30)


def test_the_api_serves_the_built_images(engine, docker_sdk):
    version = engine.version()
    assert any(c.get("Name") == "Podman Engine" for c in version.get("Components", [])), version
    tag = docker_sdk.ray_version()
    for name in ("base-deps", "deploy", "examples"):
        image = engine.images.get(f"localhost/ray/{name}:dev")
        assert f"localhost/ray/{name}:{tag}" in image.tags, image.tags
    deploy = engine.images.get("localhost/ray/deploy:dev").attrs["Config"]
    assert deploy["Entrypoint"] == ["tini", "--", "ray", "start", "--block"]
    assert deploy["Cmd"] == ["--head"]


def test_head_and_two_worker_containers_run_tasks_on_every_node(engine, docker_sdk):
    took = docker_sdk.run_cluster(engine, workers=2)
    print(f"three-container cluster: {took:.1f} s")


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
