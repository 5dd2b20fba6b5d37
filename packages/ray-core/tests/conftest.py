import pytest

import ray

SMALL_STORE = 256 * 1024**2


@pytest.fixture(scope="module")
def ray_module():
    """One 2-CPU cluster shared by the tests of a module."""
    info = ray.init(num_cpus=2, object_store_memory=SMALL_STORE, num_gpus=0)
    yield info
    ray.shutdown()


@pytest.fixture
def ray_start():
    """A fresh cluster per test; parametrize with indirect=True to pass init kwargs."""

    def start(**kwargs):
        kwargs.setdefault("object_store_memory", SMALL_STORE)
        kwargs.setdefault("num_cpus", 2)
        return ray.init(**kwargs)

    yield start
    ray.shutdown()
