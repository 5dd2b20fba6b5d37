"""Batch L-BFGS with actor-computed loss and gradient drives the loss down."""

import importlib.util
import os

import numpy as np
import pytest

import ray

HERE = os.path.dirname(__file__)


def _load():
    spec = importlib.util.spec_from_file_location("lbfgs_example_driver", os.path.join(HERE, "driver.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module



def test_distributed_gradient_matches_finite_differences(ray_cluster):
    driver = _load()
    actors = [driver.Network.remote(shard) for shard in (driver.load_batches()[:1], driver.load_batches()[1:2])]
    full_loss, full_grad = driver.make_objective(actors)
    theta = 0.1 * np.random.default_rng(1).normal(size=driver.num_parameters())
    direction = np.random.default_rng(2).normal(size=theta.shape)
    eps = 1e-3
    numeric = (full_loss(theta + eps * direction) - full_loss(theta - eps * direction)) / (2 * eps)
    assert full_grad(theta) @ direction == pytest.approx(numeric, rel=2e-2)
    for actor in actors:
        ray.kill(actor)


def test_lbfgs_reduces_the_loss(ray_cluster):
    result = _load().main(["--num-actors=2", "--maxiter=15"])
    assert result["final_loss"] < 0.3 * result["initial_loss"]
