"""Tune + PyTorch with AsyncHyperBand (FEATURES EX-044 ``tune_mnist_async_hyperband``).

The PyTorch rendering of the documents' TensorFlow example: the digits CNN of
mnist_pytorch.py trained by the function API, with hyperparameters *sampled* per trial
(log-uniform learning rate, uniform momentum, a choice of activation and width) and
AsyncHyperBand (ASHA) stopping the trials that lag at each rung, measured in
``timesteps_total`` (training images seen), as the TF example measured steps.

    python examples/tune/tune_mnist_async_hyperband.py                 # full size: 16 trials, up to 10 epochs
    python examples/tune/tune_mnist_async_hyperband.py --smoke-test    # 4 trials, up to 3 epochs
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cloudpickle
import mnist_pytorch
import numpy as np

from ray import tune
from ray.tune.schedulers import AsyncHyperBandScheduler

cloudpickle.register_pickle_by_value(mnist_pytorch)  # workers lack this directory on their path

TRAIN_IMAGES = 1437  # 80% of scikit-learn's 1797 digits (mnist_pytorch.load_digits_split)


def main(smoke_test: bool = False, local_dir: str | None = None):
    epochs = 3 if smoke_test else 10
    scheduler = AsyncHyperBandScheduler(
        time_attr="timesteps_total", metric="mean_accuracy", mode="max",
        max_t=epochs * TRAIN_IMAGES, grace_period=TRAIN_IMAGES, reduction_factor=3,
    )
    return tune.run(
        mnist_pytorch.train_mnist,
        name="tune_mnist_async_hyperband",
        scheduler=scheduler,
        num_samples=4 if smoke_test else 16,
        stop={"mean_accuracy": 0.99, "training_iteration": epochs},
        config={
            "lr": tune.sample_from(lambda spec: float(10 ** np.random.uniform(-3, -0.5))),
            "momentum": tune.sample_from(lambda spec: float(np.random.uniform(0.1, 0.9))),
            "activation": tune.sample_from(lambda spec: str(np.random.choice(mnist_pytorch.ACTIVATIONS))),
            "hidden": tune.sample_from(lambda spec: int(np.random.choice([16, 32, 64, 128]))),
            "epochs": epochs,
        },
        local_dir=local_dir,
        verbose=0 if smoke_test else 1,
    )


if __name__ == "__main__":
    mnist_pytorch.run_cli(main)
