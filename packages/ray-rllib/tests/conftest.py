"""Shared fixtures for the ray-rllib tests."""

from __future__ import annotations

import pytest

import ray


@pytest.fixture(autouse=True)
def _results_in_tmp(tmp_path, monkeypatch):
    """Standalone trainers write to ~/ray_results; keep tests out of the real one."""
    monkeypatch.setenv("TUNE_RESULT_DIR", str(tmp_path / "ray_results"))


@pytest.fixture
def ray_start_2_cpus():
    ray.init(num_cpus=2)
    try:
        yield
    finally:
        ray.shutdown()
