"""The documented PyTorchTrainer example (Ray 0.7 docs): learn y = 2x + 5.

python examples/sgd/pytorch_linear.py [--num-replicas 2] [--epochs 5]
"""

import argparse

import numpy as np
import torch
import torch.nn as nn

import ray
from ray.experimental.sgd.pytorch import PyTorchTrainer, Resources, utils


class LinearDataset(torch.utils.data.Dataset):
    """y = a * x + b"""

    def __init__(self, a, b, size=1000):
        x = np.arange(0, 10, 10 / size, dtype=np.float32)
        self.x = torch.from_numpy(x).unsqueeze(1)
        self.y = torch.from_numpy(a * x + b).unsqueeze(1)

    def __getitem__(self, index):
        return self.x[index], self.y[index]

    def __len__(self):
        return len(self.x)


def model_creator(config):
    return nn.Linear(1, 1)


def data_creator(config):
    return LinearDataset(2, 5), LinearDataset(2, 5, size=400)


def main(num_replicas: int = 2, epochs: int = 5) -> list[dict]:
    # A small object store is plenty for a linear model.
    ray.init(num_cpus=num_replicas, object_store_memory=200 * 1024**2)
    try:
        trainer = PyTorchTrainer(
            model_creator,
            data_creator,
            optimizer_creator=utils.sgd_mse_optimizer,
            config={"lr": 1e-2},
            num_replicas=num_replicas,
            resources_per_replica=Resources(num_cpus=1),
            batch_size=16,
            backend="auto",
        )
        history = []
        for _ in range(epochs):
            stats = trainer.train()
            stats.update(trainer.validate())
            print(stats)
            history.append(stats)
        model = trainer.get_model()
        print(f"learned y = {model.weight.item():.3f} x + {model.bias.item():.3f}")
        trainer.shutdown()
        return history
    finally:
        ray.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--num-replicas", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()
    main(args.num_replicas, args.epochs)
