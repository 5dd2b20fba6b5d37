"""Shared by the examples' smoke tests."""

import pytest

import ray


@pytest.fixture(scope="module")
def ray_cluster():
    """One 2-CPU single-node cluster per test module (a module that needs another size
    defines its own ``ray_cluster``)."""
    ray.init(num_cpus=2)
    yield
    ray.shutdown()
