"""ES workers share one noise block and the linear CartPole policy improves."""

import importlib.util
import os

import numpy as np

import ray

HERE = os.path.dirname(__file__)


def _load():
    spec = importlib.util.spec_from_file_location("es_example", os.path.join(HERE, "es.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_centered_ranks_are_symmetric_in_minus_half_to_half():
    ranks = _load().centered_ranks(np.array([[3.0, 1.0], [2.0, 10.0]]))
    assert np.allclose(ranks, [[1 / 6, -0.5], [-1 / 6, 0.5]])


def test_es_improves_cartpole_returns():
    ray.init(num_cpus=2)
    try:
        returns = _load().main(["--num-workers=2", "--iterations=6", "--pairs-per-worker=4", "--noise-size=100000"])
    finally:
        ray.shutdown()
    assert len(returns) == 6
    assert max(returns[-3:]) > returns[0]
