"""Build the images with podman and run a two-container cluster (``docker`` marker).

Not in the default run: a cold build takes ~4.5 min here (base from mmdebstrap plus
three images), a warm one seconds. Run with ``./ci/test.sh -m docker``; needs root,
podman, buildah, runc and mmdebstrap (Debian packages).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(1800)]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _ip() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("10.255.255.255", 1))
        return s.getsockname()[0]


@pytest.fixture(scope="module")
def images():
    if shutil.which("podman") is None or shutil.which("mmdebstrap") is None:
        pytest.skip("needs podman and mmdebstrap (apt-get install podman buildah runc mmdebstrap)")
    start = time.monotonic()
    subprocess.run([os.path.join(ROOT, "docker", "build.sh")], check=True, timeout=1500)
    return time.monotonic() - start


def test_head_and_worker_containers_form_a_cluster(images):
    ip, port = _ip(), 26391
    # Containers share no files: the worker needs the cluster secret given explicitly.
    secret = "dockertest-" + os.urandom(8).hex()
    names = ["raytest-head", "raytest-worker"]
    run = ["podman", "run", "-d", "--network=host", "--shm-size=1g"]
    try:
        subprocess.run([*run, "--name", names[0], "localhost/ray/deploy:dev", "--head",
                        f"--redis-port={port}", f"--redis-password={secret}", "--num-cpus=1",
                        "--object-store-memory=200000000"], check=True)
        time.sleep(3)
        subprocess.run([*run, "--name", names[1], "localhost/ray/deploy:dev",
                        f"--address={ip}:{port}", f"--redis-password={secret}", "--num-cpus=1",
                        "--object-store-memory=200000000", '--resources={"w": 1}'], check=True)
        code = f"""
import time, ray
ray.init(address="{ip}:{port}")
deadline = time.time() + 60
while len([n for n in ray.nodes() if n["Alive"]]) < 2 and time.time() < deadline:
    time.sleep(0.2)
@ray.remote(resources={{"w": 1}})
def on_worker():
    return ray.get_runtime_context().get_node_id()
@ray.remote
def anywhere():
    return ray.get_runtime_context().get_node_id()
nodes = {{ray.get(on_worker.remote())}} | set(ray.get([anywhere.remote() for _ in range(4)]))
print(len([n for n in ray.nodes() if n["Alive"]]), len(nodes))
"""
        out = subprocess.run(["podman", "exec", names[0], "python", "-c", code],
                             capture_output=True, text=True, timeout=300)
        assert out.stdout.split() == ["2", "2"], out.stderr
    finally:
        subprocess.run(["podman", "rm", "-f", *names], capture_output=True)
