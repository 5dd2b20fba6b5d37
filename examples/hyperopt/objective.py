"""What both hyperparameter searches train: softmax regression on scikit-learn's bundled
digits, in numpy, so a trial is cheap and its accuracy depends on the hyperparameters."""

from __future__ import annotations

import numpy as np


def load_data(seed: int = 0):
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float64)
    y = digits.target
    order = np.random.default_rng(seed).permutation(len(x))
    cut = int(len(x) * 0.8)
    return x[order[:cut]], y[order[:cut]], x[order[cut:]], y[order[cut:]]


def generate_hyperparameters(rng: np.random.Generator) -> dict:
    """Random search space: log-uniform learning rate and weight decay, a batch size."""
    return {
        "learning_rate": float(10 ** rng.uniform(-4, 0.5)),
        "weight_decay": float(10 ** rng.uniform(-6, -1)),
        "batch_size": int(rng.choice([8, 32, 128])),
    }


def init_weights(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(scale=0.01, size=(65, 10))


def train_steps(weights: np.ndarray, params: dict, steps: int, seed: int = 0) -> np.ndarray:
    """``steps`` minibatch SGD steps on the cross-entropy loss; returns new weights."""
    x, y, _, _ = load_data()
    x = np.hstack([x, np.ones((len(x), 1))])
    w = weights.copy()
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        idx = rng.integers(0, len(x), params["batch_size"])
        logits = x[idx] @ w
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        probs[np.arange(len(idx)), y[idx]] -= 1.0
        grad = x[idx].T @ probs / len(idx) + params["weight_decay"] * w
        w -= params["learning_rate"] * grad
    return w


def accuracy(weights: np.ndarray) -> float:
    _, _, x_test, y_test = load_data()
    x_test = np.hstack([x_test, np.ones((len(x_test), 1))])
    return float(((x_test @ weights).argmax(axis=1) == y_test).mean())
