"""Random hyperparameter search with ``ray.wait`` (FEATURES EX-010): every trial is a
task; the driver handles results in the order they finish, not the order submitted,
and keeps the best.

    python examples/hyperopt/hyperopt_simple.py --trials=5 --steps=10     # as documented
    python examples/hyperopt/hyperopt_simple.py --trials=100 --steps=500  # full size
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cloudpickle
import numpy as np
import objective

import ray

cloudpickle.register_pickle_by_value(objective)  # workers lack this directory on their path


@ray.remote
def train_cnn_and_compute_accuracy(params: dict, steps: int) -> float:
    weights = objective.train_steps(objective.init_weights(), params, steps)
    return objective.accuracy(weights)


def search(trials: int, steps: int, seed: int = 0) -> tuple[dict, float, list]:
    rng = np.random.default_rng(seed)
    params_by_ref = {}
    for _ in range(trials):
        params = objective.generate_hyperparameters(rng)
        params_by_ref[train_cnn_and_compute_accuracy.remote(params, steps)] = params
    remaining = list(params_by_ref)
    best_params, best_accuracy, finished = None, -1.0, []
    while remaining:
        # Whichever trial finishes first is processed first.
        [ready], remaining = ray.wait(remaining, num_returns=1)
        params, accuracy = params_by_ref[ready], ray.get(ready)
        finished.append((params, accuracy))
        print(f"accuracy {accuracy:.3f} with {params}")
        if accuracy > best_accuracy:
            best_params, best_accuracy = params, accuracy
    print(f"best accuracy over {trials} trials: {best_accuracy:.3f} with {best_params}")
    return best_params, best_accuracy, finished


def main(argv=None):
    parser = argparse.ArgumentParser(description="Random hyperparameter search.")
    parser.add_argument("--trials", default=2, type=int, help="number of random trials")
    parser.add_argument("--steps", default=10, type=int, help="SGD steps per trial")
    parser.add_argument("--redis-address", "--address", dest="address", default=None)
    args = parser.parse_args(argv)
    if not ray.is_initialized():
        ray.init(address=args.address)
    return search(args.trials, args.steps)


if __name__ == "__main__":
    main()
