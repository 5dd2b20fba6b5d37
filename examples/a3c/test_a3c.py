"""The A3C driver's ray.wait loop trains with gradients from Runner actors."""

import importlib.util
import os

import numpy as np

import ray

HERE = os.path.dirname(__file__)


def _load():
    spec = importlib.util.spec_from_file_location("a3c_example", os.path.join(HERE, "a3c.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gae_with_lambda_one_is_discounted_return_minus_value():
    a3c = _load()
    rewards, values = np.array([1.0, 1.0, 1.0]), np.array([0.5, 0.2, 0.1])
    advantages, targets = a3c.process_rollout(rewards, values, bootstrap_value=2.0, gamma=0.9)
    returns = np.array([1 + 0.9 + 0.81 + 0.729 * 2, 1 + 0.9 + 0.81 * 2, 1 + 0.9 * 2])
    assert np.allclose(targets, returns)
    assert np.allclose(advantages, returns - values)


def test_a3c_runs_asynchronously_on_runner_actors():
    ray.init(num_cpus=2)
    try:
        policy, episodes = _load().main(["--num-workers=2", "--total-steps=600"])
    finally:
        ray.shutdown()
    assert len(episodes) >= 3 and all(e >= 1 for e in episodes)
