"""The nccl path (runs only where CUDA devices exist: ``-m gpu``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ray
from ray.sgd import PyTorchTrainer, Resources
from ray.sgd.weights import get_flat

pytestmark = pytest.mark.gpu


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_nccl_replicas_train_on_gpus_and_stay_identical(regression_job):
    num_gpus = torch.cuda.device_count()
    replicas = min(2, num_gpus)  # nccl needs one device per rank
    ray.init(num_cpus=2, num_gpus=num_gpus, object_store_memory=128 * 1024**2)
    try:
        trainer = PyTorchTrainer(
            **regression_job,
            num_replicas=replicas,
            resources_per_replica=Resources(num_cpus=1, num_gpus=1),
            batch_size=8,
        )
        assert trainer._spec.backend == "nccl"
        first = trainer.train(num_steps=20)
        last = trainer.train(num_steps=20)
        flats = trainer.foreach_model(get_flat)
        on_gpu = trainer.foreach_model(lambda model: next(model.parameters()).is_cuda)
        trainer.shutdown()
    finally:
        ray.shutdown()
    assert all(on_gpu)
    assert last["train_loss"] < first["train_loss"]
    assert all(np.array_equal(flats[0], f) for f in flats[1:])
