"""Synchronous parameter server (FEATURES EX-013): worker actors compute gradients on
the same weights; the server actor averages them and applies one step, with the
learning rate scaled by the number of workers (the linear scaling rule).

    python examples/parameter_server/sync_parameter_server.py --num-workers=4
    python examples/parameter_server/sync_parameter_server.py --num-workers=2 --iterations=20
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cloudpickle
import model
import numpy as np
from model import BatchSampler, SimpleCNN, load_digits_split

import ray

# Workers do not have this directory on their path: ship model.py by value with the
# functions that use it (on a cluster the file need not exist on the other nodes).
cloudpickle.register_pickle_by_value(model)


@ray.remote
class ParameterServer:
    def __init__(self, learning_rate: float):
        self.net = SimpleCNN(learning_rate=learning_rate)

    def apply_gradients(self, *gradients):
        self.net.apply_gradients(np.mean(gradients, axis=0))
        return self.net.get_flat()

    def get_weights(self):
        return self.net.get_flat()


@ray.remote
class Worker:
    def __init__(self, worker_index: int, batch_size: int = 50):
        self.worker_index = worker_index
        self.data = BatchSampler(seed=worker_index, batch_size=batch_size)
        self.net = SimpleCNN()

    def compute_gradients(self, weights):
        self.net.set_flat(weights)
        return self.net.compute_gradients(*self.data.next_batch())


def train(num_workers: int = 4, iterations: int = 200, base_lr: float = 0.1) -> list[float]:
    ps = ParameterServer.remote(base_lr * num_workers)
    workers = [Worker.remote(i) for i in range(num_workers)]
    net = SimpleCNN()
    _, _, x_test, y_test = load_digits_split()
    current_weights = ps.get_weights.remote()
    accuracies = []
    for i in range(iterations):
        gradients = [worker.compute_gradients.remote(current_weights) for worker in workers]
        current_weights = ps.apply_gradients.remote(*gradients)
        if i % 10 == 9 or i == iterations - 1:
            net.set_flat(ray.get(current_weights))
            accuracies.append(net.accuracy(x_test, y_test))
            print(f"iteration {i + 1}: test accuracy {accuracies[-1]:.3f}")
    for actor in [ps, *workers]:
        ray.kill(actor)
    return accuracies


def main(argv=None) -> list[float]:
    parser = argparse.ArgumentParser(description="Run the synchronous parameter server.")
    parser.add_argument("--num-workers", default=4, type=int)
    parser.add_argument("--iterations", default=200, type=int)
    parser.add_argument("--redis-address", "--address", dest="address", default=None)
    args = parser.parse_args(argv)
    if not ray.is_initialized():
        ray.init(address=args.address)
    start = time.perf_counter()
    accuracies = train(args.num_workers, args.iterations)
    print(f"final test accuracy {accuracies[-1]:.3f} in {time.perf_counter() - start:.1f} s")
    return accuracies


if __name__ == "__main__":
    main()
