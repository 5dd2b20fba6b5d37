"""Training in parallel with actors: weight averaging and gradient averaging (FEATURES
EX-020). Each actor owns a PyTorch linear model and its own samples of
``y = 0.1 x + 0.3 + noise``. Weights travel as ``state_dict``s of numpy arrays (what
the documents' ``TensorFlowVariables`` get/set did for TensorFlow).

* weight averaging: every actor trains a few steps from the same weights, the driver
  averages the resulting weights and broadcasts them;
* gradient averaging: every actor computes a gradient at the same weights, the driver
  averages them and takes one step.

Both converge to w ~ 0.1, b ~ 0.3.

    python examples/weight_averaging/weight_averaging.py               # full size
    python examples/weight_averaging/weight_averaging.py --iterations=20
"""

from __future__ import annotations

import argparse

import numpy as np

import ray


def get_weights(model) -> dict[str, np.ndarray]:
    return {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


def set_weights(model, weights: dict[str, np.ndarray]) -> None:
    import torch

    model.load_state_dict({k: torch.tensor(v) for k, v in weights.items()})


@ray.remote
class LinearRegressor:
    def __init__(self, seed: int, num_samples: int = 100):
        import torch

        torch.set_num_threads(1)
        torch.manual_seed(seed)
        self.torch = torch
        rng = np.random.default_rng(seed)
        x = rng.random(num_samples).astype(np.float32)
        y = x * 0.1 + 0.3 + rng.normal(scale=0.01, size=num_samples).astype(np.float32)
        self.x, self.y = torch.tensor(x)[:, None], torch.tensor(y)[:, None]
        self.model = torch.nn.Linear(1, 1)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.5)

    def _loss(self):
        return self.torch.nn.functional.mse_loss(self.model(self.x), self.y)

    def get_weights(self):
        return get_weights(self.model)

    def step(self, weights, num_steps: int = 1):
        """Train ``num_steps`` from ``weights``; return the new weights."""
        set_weights(self.model, weights)
        for _ in range(num_steps):
            self.optimizer.zero_grad()
            self._loss().backward()
            self.optimizer.step()
        return get_weights(self.model)

    def compute_gradients(self, weights):
        set_weights(self.model, weights)
        self.model.zero_grad()
        self._loss().backward()
        return {name: p.grad.numpy().copy() for name, p in self.model.named_parameters()}


def average(dicts):
    return {k: np.mean([d[k] for d in dicts], axis=0) for k in dicts[0]}


def train_weight_averaging(actors, iterations: int):
    weights = ray.get(actors[0].get_weights.remote())
    for _ in range(iterations):
        weights = average(ray.get([a.step.remote(weights, 5) for a in actors]))
    return weights


def train_gradient_averaging(actors, iterations: int, lr: float = 0.7):
    # Stable below 2 / (largest Hessian eigenvalue of the MSE, about 2.5 for x in [0, 1]).
    weights = ray.get(actors[0].get_weights.remote())
    for _ in range(iterations):
        grads = average(ray.get([a.compute_gradients.remote(weights) for a in actors]))
        weights = {k: weights[k] - lr * grads[k] for k in weights}
    return weights


def summarize(weights) -> tuple[float, float]:
    return float(weights["weight"].ravel()[0]), float(weights["bias"].ravel()[0])


def main(argv=None) -> dict[str, tuple[float, float]]:
    parser = argparse.ArgumentParser(description="Weight and gradient averaging across actors.")
    parser.add_argument("--num-actors", default=4, type=int)
    parser.add_argument("--iterations", default=200, type=int)
    parser.add_argument("--redis-address", "--address", dest="address", default=None)
    args = parser.parse_args(argv)
    if not ray.is_initialized():
        ray.init(address=args.address)
    actors = [LinearRegressor.remote(seed) for seed in range(args.num_actors)]
    out = {
        "weight_averaging": summarize(train_weight_averaging(actors, args.iterations)),
        "gradient_averaging": summarize(train_gradient_averaging(actors, args.iterations * 2)),
    }
    for actor in actors:
        ray.kill(actor)
    for name, (w, b) in out.items():
        print(f"{name}: w = {w:.3f}, b = {b:.3f} (expected 0.1, 0.3)")
    return out


if __name__ == "__main__":
    main()
