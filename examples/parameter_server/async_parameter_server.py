"""Asynchronous parameter server (FEATURES EX-013): one actor holds the weights;
worker *tasks* get its handle, pull weights, compute a gradient and push an update,
never waiting for each other.

    python examples/parameter_server/async_parameter_server.py --num-workers=4
    python examples/parameter_server/async_parameter_server.py --num-workers=2 --steps=20  # smoke
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cloudpickle
import model
from model import BatchSampler, SimpleCNN, load_digits_split

import ray

# Workers do not have this directory on their path: ship model.py by value with the
# functions that use it (on a cluster the file need not exist on the other nodes).
cloudpickle.register_pickle_by_value(model)


@ray.remote
class ParameterServer:
    def __init__(self, keys, values):
        values = [value.copy() for value in values]
        self.weights = dict(zip(keys, values))

    def push(self, keys, values):
        for key, value in zip(keys, values):
            self.weights[key] += value

    def pull(self, keys):
        return [self.weights[key] for key in keys]


@ray.remote
def worker_task(ps, worker_index: int, num_steps: int, batch_size: int = 50):
    net = SimpleCNN(learning_rate=0.1)
    data = BatchSampler(seed=worker_index, batch_size=batch_size)
    keys = ["weights"]
    for _ in range(num_steps):
        # Get the latest weights from the parameter server.
        [weights] = ray.get(ps.pull.remote(keys))
        net.set_flat(weights)
        # Compute an update and push it; do not wait for the push to finish.
        gradient = net.compute_gradients(*data.next_batch())
        ps.push.remote(keys, [-net.learning_rate * gradient])
    return num_steps


def train(num_workers: int = 4, steps: int = 200) -> list[float]:
    """Run the workers to completion, measuring test accuracy while they push."""
    net = SimpleCNN()
    _, _, x_test, y_test = load_digits_split()
    ps = ParameterServer.remote(["weights"], [net.get_flat()])
    tasks = [worker_task.remote(ps, i, steps) for i in range(num_workers)]
    accuracies = []
    pending = tasks
    while pending:
        _, pending = ray.wait(pending, timeout=1.0)
        [weights] = ray.get(ps.pull.remote(["weights"]))
        net.set_flat(weights)
        accuracies.append(net.accuracy(x_test, y_test))
        print(f"test accuracy {accuracies[-1]:.3f}")
    [weights] = ray.get(ps.pull.remote(["weights"]))
    net.set_flat(weights)
    accuracies.append(net.accuracy(x_test, y_test))
    ray.kill(ps)
    return accuracies


def main(argv=None) -> list[float]:
    parser = argparse.ArgumentParser(description="Run the asynchronous parameter server.")
    parser.add_argument("--num-workers", default=4, type=int)
    parser.add_argument("--steps", default=200, type=int, help="gradient steps per worker")
    parser.add_argument("--redis-address", "--address", dest="address", default=None)
    args = parser.parse_args(argv)
    if not ray.is_initialized():
        ray.init(address=args.address)
    start = time.perf_counter()
    accuracies = train(args.num_workers, args.steps)
    print(f"final test accuracy {accuracies[-1]:.3f} in {time.perf_counter() - start:.1f} s")
    return accuracies


if __name__ == "__main__":
    main()
