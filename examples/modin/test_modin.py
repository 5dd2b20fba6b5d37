"""Builds the README's scratch venv from the package registry and runs modin_check.py
in it (Modin needs pandas < 2.4, so it cannot share the main venv). Skips when the
registry cannot be reached."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
THIRD_PARTY = ["pandas>=2.2,<2.4", "fsspec", "packaging", "psutil", "typing-extensions", "pyarrow"]
UNREACHABLE = ("Could not find a version", "No matching distribution", "Failed to establish",
               "Temporary failure in name resolution", "Network is unreachable", "ConnectionError")


def _pip(venv: str, *args: str) -> None:
    done = subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q", *args],
                          capture_output=True, text=True, timeout=240)
    if done.returncode == 0:
        return
    output = done.stdout + done.stderr
    if any(marker in output for marker in UNREACHABLE):
        pytest.skip(f"the package registry is unreachable: {output.strip().splitlines()[-1][:200]}")
    pytest.fail(f"pip install {' '.join(args)} failed:\n{output[-3000:]}")


@pytest.mark.slow
def test_modin_runs_unmodified_on_our_ray():
    with tempfile.TemporaryDirectory(prefix="modin-venv-") as venv:
        subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=120)
        _pip(venv, "modin==0.37.1", "--no-deps")
        _pip(venv, *THIRD_PARTY, "-e", os.path.join(REPO, "packages", "ray-plasma"),
             "-e", os.path.join(REPO, "packages", "ray-core"))
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        done = subprocess.run([os.path.join(venv, "bin", "python"), os.path.join(HERE, "modin_check.py")],
                              capture_output=True, text=True, timeout=240, env=env, cwd=REPO)
    report = done.stdout + done.stderr[-3000:]
    assert done.returncode == 0, report
    assert "20/20 ok" in done.stdout, report
