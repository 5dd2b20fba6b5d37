"""PyTorchTrainer through real Ray actors and torch.distributed (gloo, CPU)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ray.sgd import PyTorchTrainer
from ray.sgd.weights import get_flat


def test_two_replicas_match_one_replica_and_stay_bit_identical(ray_2_cpus, regression_job):
    one = PyTorchTrainer(**regression_job, num_replicas=1, batch_size=8, timeout_s=20)
    one_losses = [one.train(num_steps=1)["train_loss"] for _ in range(50)]
    one_weights = one.foreach_model(get_flat)[0]
    one.shutdown()

    two = PyTorchTrainer(**regression_job, num_replicas=2, batch_size=8, timeout_s=20)
    two_losses = []
    for _ in range(50):
        two_losses.append(two.train(num_steps=1)["train_loss"])
        first, second = two.foreach_model(get_flat)
        assert np.array_equal(first, second)
    two_weights = two.foreach_model(get_flat)[0]
    two.shutdown()

    relative = np.abs(np.array(one_losses) - two_losses) / np.abs(one_losses)
    assert relative.max() < 1e-5
    np.testing.assert_allclose(two_weights, one_weights, rtol=1e-4, atol=1e-6)
    assert one_losses[-1] < one_losses[0] / 10  # it learned


def test_save_restore_continue_equals_uninterrupted_run(ray_2_cpus, regression_job, tmp_path):
    trainer = PyTorchTrainer(**regression_job, num_replicas=2, batch_size=8, timeout_s=20)
    trainer.train(num_steps=3)
    path = trainer.save(str(tmp_path / "checkpoint.pt"))
    uninterrupted = [trainer.train(num_steps=30)["train_loss"]]  # crosses into epoch 1
    uninterrupted.append(trainer.validate()["validation_loss"])
    expected = trainer.get_model()

    trainer.restore(path)
    resumed = [trainer.train(num_steps=30)["train_loss"]]
    resumed.append(trainer.validate()["validation_loss"])
    actual = trainer.get_model()
    trainer.shutdown()

    assert resumed == uninterrupted
    for name, tensor in expected.state_dict().items():
        assert torch.equal(tensor, actual.state_dict()[name]), name


@pytest.mark.slow
def test_epoch_train_validate_and_get_model(ray_2_cpus, regression_job):
    trainer = PyTorchTrainer(**regression_job, num_replicas=2, batch_size=16)
    first = trainer.train()
    second = trainer.train()
    stats = trainer.validate()
    model = trainer.get_model()
    trainer.shutdown()

    assert (first["epoch"], second["epoch"]) == (0, 1)
    assert first["num_samples"] == 400 and first["batch_count"] == 25
    assert second["train_loss"] < first["train_loss"]
    assert stats["num_validation_samples"] == 40
    x, y = regression_data_creator_for_check()
    with torch.no_grad():
        local_loss = torch.nn.functional.mse_loss(model(x), y).item()
    assert local_loss == pytest.approx(stats["validation_loss"], rel=1e-5)


def regression_data_creator_for_check():
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(400, 4, generator=generator)
    y = x.sum(dim=1, keepdim=True) * 0.5 + 1
    return x[:40], y[:40]
