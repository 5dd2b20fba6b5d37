"""docker/kubernetes/ run as pods with ``podman kube play`` (marker ``docker``).

docker/kubernetes/podman_kube.py plays head.yaml, then worker.yaml once per worker, with
the few adaptations podman needs (its docstring lists them); the pods form one Ray
cluster, and submit.yaml's job joins it from a pod of its own and runs its ConfigMap's
script, whose output and exit code come back. Not in the default run: ``./ci/test.sh -m
docker``. The manifests themselves are validated offline in tests/test_deploy_files.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(3000)]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "docker", "kubernetes", "podman_kube.py")
WORKERS = 2


def _kube(*args, timeout=900):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip


def test_head_and_worker_pods_form_one_cluster_and_run_the_submit_job(podman_images):
    _kube("down")  # a clean start, whatever an interrupted run left
    started = time.monotonic()
    try:
        up = _kube("up", f"--workers={WORKERS}")
        assert up.returncode == 0, up.stdout + up.stderr
        addresses = re.findall(r"pod \S+ at (\S+)", up.stdout)
        assert len(addresses) == 1 + WORKERS, up.stdout
        brought_up = time.monotonic() - started
        job = _kube("submit", f"--workers={WORKERS}")
        assert job.returncode == 0, job.stdout + job.stderr
        # The job's pod joined too (0 CPUs), so the cluster has head + workers + 1 nodes,
        # and its tasks ran on the head and on every worker pod.
        assert f"nodes: {2 + WORKERS}" in job.stdout, job.stdout
        for address in addresses:
            assert f"'{address}'" in job.stdout, (address, job.stdout)
        print(f"kube play: up {brought_up:.1f} s, submit job {time.monotonic() - started - brought_up:.1f} s")
    finally:
        down = _kube("down")
    assert down.returncode == 0, down.stderr
    left = subprocess.run(["podman", "pod", "ps", "--format", "{{.Name}}"], capture_output=True,
                          text=True, timeout=60).stdout.split()  # fmt: skip
    assert not [p for p in left if p.startswith(("ray-head", "ray-worker", "ray-submit"))], left
