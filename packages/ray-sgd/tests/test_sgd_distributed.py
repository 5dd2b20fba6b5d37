"""DistributedSGD through real actors and the object store."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ray.sgd import DistributedSGD, Model
from ray.sgd.weights import get_flat


class RegressionModel(Model):
    """A linear model that draws its own batches (seeded per replica)."""

    def __init__(self, worker_index: int, device_index: int):
        super().__init__()
        torch.manual_seed(worker_index * 10 + device_index)  # replicas start different
        self.layer = torch.nn.Linear(4, 2)
        self.data = torch.Generator().manual_seed(100 + worker_index * 10 + device_index)
        self.optimizer = torch.optim.SGD(self.parameters(), lr=0.1)

    def forward(self, x):
        return self.layer(x)

    def next_batch(self):
        x = torch.randn(8, 4, generator=self.data)
        return x, torch.stack([x.sum(dim=1), x[:, 0]], dim=1)

    def get_loss(self):
        x, y = self.next_batch()
        return torch.nn.functional.mse_loss(self(x), y)

    def get_optimizer(self):
        return self.optimizer

    def get_metrics(self):
        return {"weight_norm": self.layer.weight.detach().norm().item()}


def _reference_run(num_workers, devices, steps):
    """The same SGD in one process: average of the gradients of every replica."""
    replicas = [RegressionModel(w, d) for w in range(num_workers) for d in range(devices)]
    start = get_flat(replicas[0])
    for model in replicas:
        torch.nn.utils.vector_to_parameters(torch.tensor(start), model.parameters())
    for _ in range(steps):
        grads = []
        for model in replicas:
            model.zero_grad()
            model.get_loss().backward()
            grads.append(torch.nn.utils.parameters_to_vector([p.grad for p in model.parameters()]))
        average = torch.stack(grads).mean(dim=0)
        for model in replicas:
            torch.nn.utils.vector_to_parameters(
                average.clone(), [p.grad for p in model.parameters()]
            )
            model.optimizer.step()
    return get_flat(replicas[0])


@pytest.mark.parametrize("strategy", ["ps", pytest.param("simple", marks=pytest.mark.slow)])
def test_strategy_keeps_replicas_identical_and_matches_single_process_sgd(ray_2_cpus, strategy):
    sgd = DistributedSGD(
        RegressionModel,
        num_workers=2,
        devices_per_worker=2,
        gpu=False,
        strategy=strategy,
        grad_shard_bytes=16,  # 10 float32 parameters -> 3 shards over 2 servers
    )
    assert sgd.plan.num_shards == 3
    losses = []
    for step in range(10):
        stats = sgd.step(fetch_stats=step % 3 == 0)
        if stats:
            losses.append(stats["loss"])
            assert "weight_norm" in stats
        weights = sgd.foreach_model(get_flat)
        assert len(weights) == 4
        assert all(np.array_equal(weights[0], w) for w in weights[1:])
    assert losses[-1] < losses[0]
    assert sgd.foreach_worker(lambda worker: worker.worker_index) == [0, 1]
    sgd.shutdown()
    # Both strategies average with the same function in the same order as this
    # reference, so they agree with it (and with each other) to rounding.
    np.testing.assert_allclose(weights[0], _reference_run(2, 2, 10), rtol=1e-5, atol=1e-6)


def test_unknown_strategy_is_rejected_before_any_actor_starts():
    with pytest.raises(ValueError, match="strategy"):
        DistributedSGD(RegressionModel, 1, 1, gpu=False, strategy="ring")
    with pytest.raises(ValueError, match="all_reduce_alg"):
        DistributedSGD(RegressionModel, 1, 1, gpu=False, all_reduce_alg="xring")
