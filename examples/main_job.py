"""The main job: a real workload on an embedded single-node cluster.

It starts ray (no address: Redis, a raylet with its object store, and workers
on this machine), then:

1. estimates pi with 40 Monte-Carlo tasks running in parallel;
2. trains a linear model with a parameter-server actor and 4 gradient tasks per
   step, passing a numpy weight vector through the object store;
3. runs a small map-reduce word count over generated text with ray.wait;

and prints what it did, with timings. Run: ``ci/main.sh`` (or
``python examples/main_job.py`` inside the venv).
"""

from __future__ import annotations

import collections
import random
import time

import numpy as np

import ray


@ray.remote
def sample_pi(n: int, seed: int) -> int:
    rng = np.random.default_rng(seed)
    xy = rng.random((n, 2))
    return int(((xy**2).sum(axis=1) <= 1.0).sum())


@ray.remote
class ParameterServer:
    def __init__(self, dim: int, lr: float):
        self.w = np.zeros(dim)
        self.lr = lr

    def weights(self) -> np.ndarray:
        return self.w

    def apply(self, *grads: np.ndarray) -> np.ndarray:
        self.w = self.w - self.lr * np.mean(grads, axis=0)
        return self.w


@ray.remote
def gradient(w: np.ndarray, shard: int, dim: int, true_w: np.ndarray) -> np.ndarray:
    rng = np.random.default_rng(shard)
    x = rng.normal(size=(2000, dim))
    y = x @ true_w + 0.01 * rng.normal(size=2000)
    return 2 * x.T @ (x @ w - y) / len(y)


@ray.remote
def count_words(text: str) -> dict:
    return collections.Counter(text.split())


def main() -> None:
    t0 = time.perf_counter()
    info = ray.init()
    print(f"started an embedded cluster in {time.perf_counter() - t0:.2f} s: "
          f"{ray.cluster_resources()} (GCS at {info['redis_address']})")

    t = time.perf_counter()
    n, tasks = 250_000, 40
    inside = sum(ray.get([sample_pi.remote(n, seed) for seed in range(tasks)]))
    pi = 4 * inside / (n * tasks)
    print(f"pi ~= {pi:.5f} from {n * tasks:,} samples in {tasks} tasks "
          f"({time.perf_counter() - t:.2f} s)")

    t = time.perf_counter()
    dim = 50
    true_w = np.linspace(-1, 1, dim)
    true_ref = ray.put(true_w)
    ps = ParameterServer.remote(dim, lr=0.1)
    w = ps.weights.remote()
    for _step in range(30):
        grads = [gradient.remote(w, shard, dim, true_ref) for shard in range(4)]
        w = ps.apply.remote(*grads)
    error = float(np.abs(ray.get(w) - true_w).max())
    print(f"parameter server: 30 steps x 4 gradient tasks, max weight error {error:.4f} "
          f"({time.perf_counter() - t:.2f} s)")

    t = time.perf_counter()
    rng = random.Random(0)
    vocab = ["ray", "task", "actor", "object", "store", "node", "driver", "worker"]
    chunks = [" ".join(rng.choice(vocab) for _ in range(20_000)) for _ in range(16)]
    pending = [count_words.remote(c) for c in chunks]
    total: collections.Counter = collections.Counter()
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        total.update(ray.get(ready[0]))
    top = ", ".join(f"{w}={c}" for w, c in total.most_common(3))
    print(f"word count over {sum(total.values()):,} words in {len(chunks)} map tasks: {top} "
          f"({time.perf_counter() - t:.2f} s)")

    ray.shutdown()
    print(f"done in {time.perf_counter() - t0:.2f} s; the cluster has been shut down")


if __name__ == "__main__":
    main()
