"""Shared fixtures for the ray-rllib tests."""

from __future__ import annotations

import pytest

import ray


@pytest.fixture
def ray_start_2_cpus():
    ray.init(num_cpus=2)
    try:
        yield
    finally:
        ray.shutdown()
