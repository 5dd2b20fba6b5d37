"""Tune + PyTorch, class API under HyperBand (FEATURES EX-044 ``tune_mnist_ray_hyperband``).

The PyTorch rendering of the documents' TensorFlow example: the ``TrainMNIST`` Trainable
of mnist_pytorch_trainable.py (one epoch of the digits CNN per ``_train``, weights and
optimizer state checkpointed by ``_save``/``_restore``) with sampled learning rate,
activation and width, under synchronous HyperBand. HyperBand pauses trials at each
bracket's milestone and resumes the best from their checkpoints, so the checkpointing
is exercised for real.

    python examples/tune/tune_mnist_ray_hyperband.py                 # full size: 12 trials, max_t 9 epochs
    python examples/tune/tune_mnist_ray_hyperband.py --smoke-test    # 3 trials, max_t 3 epochs
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cloudpickle
import mnist_pytorch
import mnist_pytorch_trainable
import numpy as np

from ray import tune
from ray.tune.schedulers import HyperBandScheduler

cloudpickle.register_pickle_by_value(mnist_pytorch_trainable)  # workers lack this directory on their path


def main(smoke_test: bool = False, local_dir: str | None = None):
    max_t = 3 if smoke_test else 9
    hyperband = HyperBandScheduler(time_attr="training_iteration", metric="mean_accuracy", mode="max",
                                   max_t=max_t)
    return tune.run(
        mnist_pytorch_trainable.TrainMNIST,
        name="tune_mnist_ray_hyperband",
        scheduler=hyperband,
        num_samples=3 if smoke_test else 12,
        stop={"mean_accuracy": 0.99, "training_iteration": max_t},
        config={
            "lr": tune.sample_from(lambda spec: float(10 ** np.random.uniform(-3, -0.5))),
            "momentum": 0.9,
            "activation": tune.sample_from(lambda spec: str(np.random.choice(mnist_pytorch.ACTIVATIONS))),
            "hidden": tune.sample_from(lambda spec: int(np.random.choice([16, 64, 128]))),
        },
        local_dir=local_dir,
        verbose=0 if smoke_test else 1,
    )


if __name__ == "__main__":
    mnist_pytorch.run_cli(main)
