"""Batch L-BFGS (FEATURES EX-016): scipy's ``fmin_l_bfgs_b`` drives the optimisation;
the loss and gradient over the whole data set are sums over actors, each holding a
shard of the batches. ``theta`` is ``ray.put`` once per evaluation and passed by ref.

The model is a 2-layer MLP (PyTorch autograd for the gradient) on scikit-learn's
bundled digits, standing in for the documents' TensorFlow MNIST model.

    python examples/lbfgs/driver.py                      # full size: 4 actors, 200 iterations
    python examples/lbfgs/driver.py --num-actors=2 --maxiter=20
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.optimize

import ray

HIDDEN = 32


def load_batches(batch_size: int = 100):
    from sklearn.datasets import load_digits

    digits = load_digits()
    x, y = (digits.data / 16.0).astype(np.float32), digits.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(x))
    x, y = x[order], y[order]
    return [(x[i : i + batch_size], y[i : i + batch_size]) for i in range(0, len(x), batch_size)]


def num_parameters() -> int:
    return 64 * HIDDEN + HIDDEN + HIDDEN * 10 + 10


@ray.remote
class Network:
    """Holds some batches; computes the summed loss or gradient over them for any theta."""

    def __init__(self, batches):
        import torch

        torch.set_num_threads(1)
        self.torch = torch
        self.batches = [(torch.as_tensor(xs.copy()), torch.as_tensor(ys.copy())) for xs, ys in batches]

    def _loss(self, theta: np.ndarray):
        torch = self.torch
        t = torch.tensor(theta, dtype=torch.float32, requires_grad=True)
        sizes = [64 * HIDDEN, HIDDEN, HIDDEN * 10, 10]
        w1, b1, w2, b2 = torch.split(t, sizes)
        total = 0.0
        for xs, ys in self.batches:
            hidden = torch.tanh(xs @ w1.view(64, HIDDEN) + b1)
            logits = hidden @ w2.view(HIDDEN, 10) + b2
            total = total + torch.nn.functional.cross_entropy(logits, ys, reduction="sum")
        return t, total

    def loss(self, theta):
        return float(self._loss(theta)[1])

    def grad(self, theta):
        t, total = self._loss(theta)
        total.backward()
        return t.grad.numpy()


def make_objective(actors):
    def full_loss(theta):
        theta_id = ray.put(theta)
        return sum(ray.get([actor.loss.remote(theta_id) for actor in actors]))

    def full_grad(theta):
        theta_id = ray.put(theta)
        # fmin_l_bfgs_b needs float64.
        return sum(ray.get([actor.grad.remote(theta_id) for actor in actors])).astype("float64")

    return full_loss, full_grad


def run(num_actors: int = 4, maxiter: int = 200) -> dict:
    batches = load_batches()
    shards = [batches[i::num_actors] for i in range(num_actors)]
    actors = [Network.remote(shard) for shard in shards]
    full_loss, full_grad = make_objective(actors)
    theta_init = 1e-2 * np.random.default_rng(0).normal(size=num_parameters())
    start = time.perf_counter()
    initial_loss = full_loss(theta_init)
    theta, final_loss, info = scipy.optimize.fmin_l_bfgs_b(
        full_loss, theta_init, fprime=full_grad, maxiter=maxiter
    )
    elapsed = time.perf_counter() - start
    for actor in actors:
        ray.kill(actor)
    n = sum(len(xs) for xs, _ in batches)
    print(f"mean loss {initial_loss / n:.3f} -> {final_loss / n:.3f} in {info['nit']} iterations, {elapsed:.1f} s")
    return {"initial_loss": initial_loss, "final_loss": final_loss, "iterations": info["nit"], "seconds": elapsed}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description="Batch L-BFGS with loss and gradient on actors.")
    parser.add_argument("--num-actors", default=4, type=int)
    parser.add_argument("--maxiter", default=200, type=int)
    parser.add_argument("--redis-address", "--address", dest="address", default=None)
    args = parser.parse_args(argv)
    if not ray.is_initialized():
        ray.init(address=args.address)
    return run(args.num_actors, args.maxiter)


if __name__ == "__main__":
    main()
