"""Shared by the examples' smoke tests."""

import os
import subprocess
import sys
import tempfile

import pytest

import ray

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_UNREACHABLE = ("Could not find a version", "No matching distribution", "Failed to establish",
                "Temporary failure in name resolution", "Network is unreachable", "ConnectionError")


@pytest.fixture(scope="module")
def ray_cluster():
    """One 2-CPU single-node cluster per test module (a module that needs another size
    defines its own ``ray_cluster``)."""
    ray.init(num_cpus=2)
    yield
    ray.shutdown()


class ScratchVenv:
    """A venv of its own for a library whose pins clash with the main venv's. ``packages``
    are installed editable from ``packages/`` (our ray), third-party ones from the registry."""

    def __init__(self, path: str):
        self.path = path
        self.python = os.path.join(path, "bin", "python")
        subprocess.run([sys.executable, "-m", "venv", path], check=True, timeout=120)

    def install(self, *requirements: str, packages: tuple[str, ...] = (), no_deps: bool = False) -> None:
        args = [*requirements]
        for name in packages:
            args += ["-e", os.path.join(REPO, "packages", name)]
        done = subprocess.run([self.python, "-m", "pip", "install", "-q", *(["--no-deps"] if no_deps else []), *args],
                              capture_output=True, text=True, timeout=300)
        if done.returncode == 0:
            return
        output = done.stdout + done.stderr
        if any(marker in output for marker in _UNREACHABLE):
            pytest.skip(f"the package registry is unreachable: {output.strip().splitlines()[-1][:200]}")
        pytest.fail(f"pip install {' '.join(args)} failed:\n{output[-3000:]}")

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        """Runs ``python *args`` in the venv from the repository root (our PYTHONPATH dropped)."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        return subprocess.run([self.python, *args], capture_output=True, text=True, timeout=timeout,
                              env=env, cwd=REPO)


@pytest.fixture
def scratch_venv():
    """A fresh venv, deleted after the test (they are hundreds of MB)."""
    with tempfile.TemporaryDirectory(prefix="scratch-venv-") as path:
        yield ScratchVenv(path)
