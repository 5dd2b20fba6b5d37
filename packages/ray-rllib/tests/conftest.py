"""Shared fixtures for ray-rllib tests.

RLlib is built on ray-core (``ray.init``) and ray-tune (``Trainable``). While
either is missing from the checkout (they are developed alongside), the
suite is skipped as a whole with the reason printed, rather than failing.
"""

from __future__ import annotations

import importlib.util

import pytest

import ray

_MISSING = []
if not hasattr(ray, "init"):
    _MISSING.append("ray-core (ray.init)")
if importlib.util.find_spec("ray.tune") is None or \
        importlib.util.find_spec("ray.tune.trainable") is None:
    _MISSING.append("ray-tune (ray.tune.trainable)")

if _MISSING:
    collect_ignore_glob = ["test_*.py"]

    def pytest_collection_finish(session):
        print(f"\nray-rllib tests skipped: missing {', '.join(_MISSING)}")


@pytest.fixture
def ray_start_2_cpus():
    ray.init(num_cpus=2)
    try:
        yield
    finally:
        ray.shutdown()
