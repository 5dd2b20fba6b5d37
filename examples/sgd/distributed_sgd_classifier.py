"""DistributedSGD on a synthetic MNIST-like task, with weight access and
accuracy monitoring (the role of Ray 0.7's simple MNIST example).

    python examples/sgd/distributed_sgd_classifier.py [--strategy ps] [--steps 60]
"""

import argparse

import torch
import torch.nn as nn

import ray
from ray.sgd import DistributedSGD, Model
from ray.sgd.weights import get_flat, set_flat

NUM_CLASSES, NUM_FEATURES = 10, 64


def synthetic_digits(num, seed):
    """Each class is a fixed random prototype plus noise."""
    prototypes = torch.randn(NUM_CLASSES, NUM_FEATURES, generator=torch.Generator().manual_seed(0))
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, NUM_CLASSES, (num,), generator=generator)
    return prototypes[labels] + torch.randn(num, NUM_FEATURES, generator=generator), labels


class Classifier(Model):
    def __init__(self, worker_index, device_index, batch_size=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(NUM_FEATURES, 64), nn.ReLU(), nn.Linear(64, NUM_CLASSES))
        # Every replica reads its own stream of examples.
        self.stream = torch.Generator().manual_seed(1000 + 10 * worker_index + device_index)
        self.batch_size = batch_size
        self.optimizer = torch.optim.SGD(self.parameters(), lr=0.1)
        self.last_accuracy = 0.0

    def forward(self, x):
        return self.net(x)

    def get_loss(self):
        x, y = synthetic_digits(
            self.batch_size, int(torch.randint(0, 2**31, (1,), generator=self.stream))
        )
        logits = self(x)
        self.last_accuracy = (logits.argmax(dim=1) == y).float().mean().item()
        return nn.functional.cross_entropy(logits, y)

    def get_optimizer(self):
        return self.optimizer

    def get_metrics(self):
        return {"train_accuracy": self.last_accuracy}


def test_accuracy(weights):
    """Load shipped weights into a local model and evaluate it."""
    model = Classifier(0, 0)
    set_flat(model, weights)
    x, y = synthetic_digits(1000, seed=12345)
    with torch.no_grad():
        return (model(x).argmax(dim=1) == y).float().mean().item()


def main(strategy="ps", steps=60, num_workers=2, devices_per_worker=2):
    ray.init(num_cpus=num_workers, object_store_memory=200 * 1024**2)
    try:
        sgd = DistributedSGD(
            Classifier,
            num_workers=num_workers,
            devices_per_worker=devices_per_worker,
            gpu=False,
            strategy=strategy,
            grad_shard_bytes=4096,
        )
        history = []
        for i in range(steps):
            stats = sgd.step(fetch_stats=i % 20 == 0 or i == steps - 1)
            if stats:
                weights = sgd.foreach_model(get_flat)[0]
                stats.update(step=i, test_accuracy=test_accuracy(weights))
                print(stats)
                history.append(stats)
        sgd.shutdown()
        return history
    finally:
        ray.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--strategy", default="ps", choices=["ps", "simple"])
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    main(args.strategy, args.steps)
