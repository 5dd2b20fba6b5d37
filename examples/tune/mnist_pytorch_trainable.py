"""Tune + PyTorch, class API (FEATURES EX-044 ``mnist_pytorch_trainable``): the same
digits CNN as mnist_pytorch.py as a ``Trainable`` with ``_setup``/``_train`` and
checkpointing through ``_save``/``_restore``, so PBT can copy good trials' weights.

    python examples/tune/mnist_pytorch_trainable.py               # full size: 4 trials x 10 iterations, PBT
    python examples/tune/mnist_pytorch_trainable.py --smoke-test
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cloudpickle
import mnist_pytorch
import numpy as np

from ray import tune
from ray.tune.schedulers import PopulationBasedTraining

cloudpickle.register_pickle_by_value(mnist_pytorch)  # workers lack this directory on their path


class TrainMNIST(tune.Trainable):
    def _setup(self, config):
        import torch

        torch.set_num_threads(1)
        torch.manual_seed(0)
        self.torch = torch
        self.data = mnist_pytorch.load_digits_split()
        self.net = mnist_pytorch.net_from_config(config)
        self.optimizer = torch.optim.SGD(self.net.parameters(), lr=config["lr"], momentum=config["momentum"])
        self.rng = np.random.default_rng(0)

    def _train(self):
        x, y, x_test, y_test = self.data
        mnist_pytorch.train_epoch(self.net, self.optimizer, x, y, 64, self.rng)
        return {"mean_accuracy": mnist_pytorch.test_accuracy(self.net, x_test, y_test)}

    def _save(self, checkpoint_dir):
        path = os.path.join(checkpoint_dir, "model.pt")
        self.torch.save({"net": self.net.state_dict(), "optimizer": self.optimizer.state_dict()}, path)
        return path

    def _restore(self, checkpoint_path):
        state = self.torch.load(checkpoint_path)
        self.net.load_state_dict(state["net"])
        self.optimizer.load_state_dict(state["optimizer"])

    def reset_config(self, new_config):
        for group in self.optimizer.param_groups:
            group["lr"], group["momentum"] = new_config["lr"], new_config["momentum"]
        self.config = new_config
        return True


def main(smoke_test: bool = False, local_dir: str | None = None):
    iterations = 2 if smoke_test else 10
    pbt = PopulationBasedTraining(time_attr="training_iteration", metric="mean_accuracy", mode="max",
                                  perturbation_interval=1,
                                  hyperparam_mutations={"lr": lambda: float(np.random.uniform(0.001, 0.1))})
    return tune.run(
        TrainMNIST,
        name="mnist-pytorch-trainable",
        scheduler=pbt,
        stop={"training_iteration": iterations},
        num_samples=2 if smoke_test else 4,
        config={"lr": tune.sample_from(lambda spec: float(np.random.uniform(0.001, 0.1))), "momentum": 0.9},
        checkpoint_freq=1,
        local_dir=local_dir,
        verbose=1,
    )


if __name__ == "__main__":
    mnist_pytorch.run_cli(main)
