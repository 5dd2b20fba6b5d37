"""Shared by the repository-level tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

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
    import time

    if os.geteuid() != 0:
        pytest.skip("the image tests install and run podman as root (docker/setup_podman.sh)")
    subprocess.run([os.path.join(ROOT, "docker", "setup_podman.sh")], check=True, timeout=900)
    start = time.monotonic()
    subprocess.run([os.path.join(ROOT, "docker", "build.sh")], check=True, timeout=2400)
    return time.monotonic() - start
