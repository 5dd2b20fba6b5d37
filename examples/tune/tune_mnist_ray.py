"""Tune + PyTorch, function API with a reporter (FEATURES EX-044 ``tune_mnist_ray``).

The PyTorch rendering of the documents' TensorFlow ``tune_mnist_ray`` example: the
digits CNN of mnist_pytorch.py (scikit-learn's bundled 8x8 digits, no download) with
its activation function, hidden width and learning rate grid-searched. Each epoch the
trial calls ``reporter(timesteps_total=..., mean_accuracy=...)``, as the TF example did
every few steps; trials stop at 99% test accuracy or after the last epoch.

    python examples/tune/tune_mnist_ray.py                 # full size: 12 trials x 10 epochs
    python examples/tune/tune_mnist_ray.py --smoke-test    # 2 trials x 2 epochs
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cloudpickle
import mnist_pytorch

from ray import tune

cloudpickle.register_pickle_by_value(mnist_pytorch)  # workers lack this directory on their path


def main(smoke_test: bool = False, local_dir: str | None = None):
    epochs = 2 if smoke_test else 10
    return tune.run(
        mnist_pytorch.train_mnist,
        name="tune_mnist_ray",
        stop={"mean_accuracy": 0.99, "training_iteration": epochs},
        config={
            "activation": tune.grid_search(["relu", "tanh"] if smoke_test else list(mnist_pytorch.ACTIVATIONS)),
            "hidden": tune.grid_search([32] if smoke_test else [32, 128]),
            "lr": tune.grid_search([0.05] if smoke_test else [0.01, 0.05]),
            "momentum": 0.9,
            "epochs": epochs,
        },
        local_dir=local_dir,
        verbose=0 if smoke_test else 1,
    )


if __name__ == "__main__":
    mnist_pytorch.run_cli(main)
