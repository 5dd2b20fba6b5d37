"""Builds the README's scratch venv from the package registry and runs modin_check.py
in it (Modin needs pandas < 2.4, so it cannot share the main venv). Skips when the
registry cannot be reached."""

from __future__ import annotations

import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
THIRD_PARTY = ["pandas>=2.2,<2.4", "fsspec", "packaging", "psutil", "typing-extensions", "pyarrow"]


@pytest.mark.slow
@pytest.mark.extended
def test_modin_runs_unmodified_on_our_ray(scratch_venv):
    scratch_venv.install("modin==0.37.1", no_deps=True)
    scratch_venv.install(*THIRD_PARTY, packages=("ray-plasma", "ray-core"))
    done = scratch_venv.run(os.path.join(HERE, "modin_check.py"), timeout=240)
    report = done.stdout + done.stderr[-3000:]
    assert done.returncode == 0, report
    assert "20/20 ok" in done.stdout, report
