"""Fixtures for ray-sgd tests: a small local cluster and tiny regression jobs."""

from __future__ import annotations

import pytest
import torch

import ray

# The object store is kept small: the machine is shared and its memory is tight.
OBJECT_STORE_BYTES = 128 * 1024**2


@pytest.fixture
def ray_2_cpus():
    ray.init(num_cpus=2, object_store_memory=OBJECT_STORE_BYTES)
    try:
        yield
    finally:
        ray.shutdown()


def linear_model_creator(config):
    torch.manual_seed(config.get("model_seed", 0))
    hidden = config.get("hidden", 8)
    return torch.nn.Sequential(
        torch.nn.Linear(4, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 1)
    )


def regression_data_creator(config):
    """y = 0.5 * sum(x) + 1 on ``config["num_samples"]`` samples (default 400)."""
    generator = torch.Generator().manual_seed(1)
    n = config.get("num_samples", 400)
    x = torch.randn(n, 4, generator=generator)
    y = x.sum(dim=1, keepdim=True) * 0.5 + 1
    data = torch.utils.data.TensorDataset(x, y)
    return data, torch.utils.data.TensorDataset(x[:40], y[:40])


def sgd_creator(model, config):
    return torch.nn.MSELoss(), torch.optim.SGD(
        model.parameters(), lr=config.get("lr", 0.05), momentum=config.get("momentum", 0.0)
    )


@pytest.fixture
def regression_job():
    """Keyword arguments of a PyTorchTrainer for a tiny regression."""
    return dict(
        model_creator=linear_model_creator,
        data_creator=regression_data_creator,
        optimizer_creator=sgd_creator,
        config={"lr": 0.05, "momentum": 0.9},
    )
