"""The Pong policy-gradient driver runs with real ALE Pong and its gradient is correct."""

import importlib.util
import os

import numpy as np
import pytest

import ray

HERE = os.path.dirname(__file__)


def _load():
    spec = importlib.util.spec_from_file_location("rl_pong_driver", os.path.join(HERE, "driver.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_policy_backward_matches_finite_differences():
    driver = _load()
    rng = np.random.default_rng(0)
    model = {"W1": rng.normal(size=(4, 6)), "W2": rng.normal(size=4)}
    xs, advantages = rng.normal(size=(3, 6)), rng.normal(size=3)

    def objective(m):  # sum_t advantage_t * logit_t: its gradient is what policy_backward returns
        return sum(a * (m["W2"] @ np.maximum(m["W1"] @ x, 0)) for x, a in zip(xs, advantages))

    hs = np.vstack([np.maximum(model["W1"] @ x, 0) for x in xs])
    grad = driver.policy_backward(model, hs, xs, advantages)
    eps = 1e-6
    for key in model:
        bumped = {k: v.copy() for k, v in model.items()}
        bumped[key].flat[0] += eps
        assert grad[key].flat[0] == pytest.approx((objective(bumped) - objective(model)) / eps, rel=1e-3, abs=1e-6)


def test_discounted_rewards_restart_after_each_point():
    r = np.array([0.0, 0.0, 1.0, 0.0, -1.0])
    assert np.allclose(_load().discount_rewards(r), [0.99**2, 0.99, 1.0, -0.99, -1.0])


def test_smoke_mode_plays_pong_on_actors():
    ray.init(num_cpus=2)
    try:
        history = _load().main(["--smoke"])
    finally:
        ray.shutdown()
    assert [h["iteration"] for h in history] == [1, 2]
    assert all(h["steps"] == 2 * 100 for h in history)
