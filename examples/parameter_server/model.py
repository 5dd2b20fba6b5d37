"""A small PyTorch CNN on scikit-learn's bundled 8x8 digits (no downloads), with the
flat-weights interface both parameter-server examples exchange through Ray."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


def load_digits_split(seed: int = 0, test_fraction: float = 0.2):
    """(x_train, y_train, x_test, y_test): 1797 images of 1x8x8, pixel values in [0, 1]."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = int(len(x) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


class SimpleCNN:
    """conv(16) -> relu -> conv(32) -> relu -> linear(10); SGD on flat numpy weights."""

    def __init__(self, learning_rate: float = 0.1, seed: int = 0):
        torch.set_num_threads(1)  # one core per actor; many actors share the machine
        torch.manual_seed(seed)
        self.learning_rate = learning_rate
        self.net = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1, stride=2), nn.ReLU(),
            nn.Flatten(), nn.Linear(32 * 4 * 4, 10),
        )
        self.shapes = [p.shape for p in self.net.parameters()]

    def get_flat(self) -> np.ndarray:
        return torch.cat([p.detach().flatten() for p in self.net.parameters()]).numpy()

    def set_flat(self, flat: np.ndarray) -> None:
        # Arrays from the object store are read-only views; copy into the parameters.
        torch.nn.utils.vector_to_parameters(torch.tensor(flat), self.net.parameters())

    def compute_gradients(self, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        self.net.zero_grad()
        loss = nn.functional.cross_entropy(self.net(torch.as_tensor(xs)), torch.as_tensor(ys))
        loss.backward()
        return torch.cat([p.grad.flatten() for p in self.net.parameters()]).numpy()

    def apply_gradients(self, flat_gradient: np.ndarray) -> None:
        self.set_flat(self.get_flat() - self.learning_rate * flat_gradient)

    def accuracy(self, xs: np.ndarray, ys: np.ndarray) -> float:
        with torch.no_grad():
            predicted = self.net(torch.as_tensor(xs)).argmax(dim=1).numpy()
        return float((predicted == ys).mean())


class BatchSampler:
    """Random minibatches of the training split, seeded per worker."""

    def __init__(self, seed: int, batch_size: int):
        self.x, self.y, _, _ = load_digits_split()
        self.rng = np.random.default_rng(seed)
        self.batch_size = batch_size

    def next_batch(self):
        idx = self.rng.integers(0, len(self.x), self.batch_size)
        return self.x[idx], self.y[idx]
