"""Tune + PyTorch, function API (FEATURES EX-044 ``mnist_pytorch``): a small CNN on
scikit-learn's bundled 8x8 digits (MNIST's little sibling, no download); each trial
reports test accuracy after every epoch and AsyncHyperBand stops the weak ones early.

    python examples/tune/mnist_pytorch.py                 # full size: 8 trials x 10 epochs
    python examples/tune/mnist_pytorch.py --smoke-test    # 1 trial x 2 epochs
"""

from __future__ import annotations

import argparse

import numpy as np

import ray
from ray import tune
from ray.tune.schedulers import AsyncHyperBandScheduler


def load_digits_split(seed: int = 0):
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None]
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    cut = int(0.8 * len(x))
    return x[order[:cut]], y[order[:cut]], x[order[cut:]], y[order[cut:]]


ACTIVATIONS = ("relu", "elu", "tanh")


def build_net(activation: str = "relu", hidden: int = 64):
    from torch import nn

    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
    act = {"relu": nn.ReLU, "elu": nn.ELU, "tanh": nn.Tanh}[activation]
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), act(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 4 * 4, hidden), act(), nn.Linear(hidden, 10),
    )


def net_from_config(config: dict):
    """The CNN a trial's config asks for (the tune_mnist_* examples tune these two)."""
    return build_net(config.get("activation", "relu"), config.get("hidden", 64))


def train_epoch(net, optimizer, x, y, batch_size: int, rng) -> None:
    import torch

    net.train()
    order = rng.permutation(len(x))
    for start in range(0, len(x), batch_size):
        idx = order[start : start + batch_size]
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(torch.as_tensor(x[idx])), torch.as_tensor(y[idx]))
        loss.backward()
        optimizer.step()


def test_accuracy(net, x, y) -> float:
    import torch

    net.eval()
    with torch.no_grad():
        return float((net(torch.as_tensor(x)).argmax(1).numpy() == y).mean())


def train_mnist(config, reporter):
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    x, y, x_test, y_test = load_digits_split()
    net = net_from_config(config)
    optimizer = torch.optim.SGD(net.parameters(), lr=config["lr"], momentum=config["momentum"])
    rng = np.random.default_rng(0)
    for epoch in range(config.get("epochs", 10)):
        train_epoch(net, optimizer, x, y, 64, rng)
        reporter(mean_accuracy=test_accuracy(net, x_test, y_test), timesteps_total=(epoch + 1) * len(x))


def main(smoke_test: bool = False, local_dir: str | None = None):
    epochs = 2 if smoke_test else 10
    scheduler = AsyncHyperBandScheduler(time_attr="training_iteration", metric="mean_accuracy",
                                        mode="max", max_t=epochs, grace_period=1)
    return tune.run(
        train_mnist,
        name="mnist-pytorch",
        scheduler=scheduler,
        stop={"mean_accuracy": 0.99, "training_iteration": epochs},
        config={
            "lr": tune.grid_search([0.1] if smoke_test else [0.001, 0.01, 0.05, 0.1]),
            "momentum": tune.grid_search([0.9] if smoke_test else [0.5, 0.9]),
            "epochs": epochs,
        },
        local_dir=local_dir,
        verbose=1,
    )


def run_cli(main, metric: str = "mean_accuracy") -> None:
    """The command line every digits example shares: ``--smoke-test``, then the best config."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke-test", action="store_true")
    args = parser.parse_args()
    ray.init()
    analysis = main(args.smoke_test)
    print("Best config:", analysis.get_best_config(metric))


if __name__ == "__main__":
    run_cli(main)
