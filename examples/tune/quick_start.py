"""The Tune quick start (Ray 0.7 docs): a grid search over momentum, stop at accuracy 99.

    python examples/tune/quick_start.py [--smoke-test]
"""

import argparse
import random

import ray
from ray import tune


def train_func(config, reporter):  # add a reporter arg
    # A stand-in for the model: accuracy grows faster with more momentum.
    accuracy = 0.0
    for _ in range(1000):
        accuracy += config["momentum"] * random.uniform(5, 15)
        reporter(mean_accuracy=min(accuracy, 100.0))  # report metrics


def main(smoke_test: bool = False, local_dir: str | None = None):
    return tune.run(
        train_func,
        name="quick-start",
        stop={"mean_accuracy": 99},
        config={"momentum": tune.grid_search([0.1, 0.2])},
        local_dir=local_dir,
        verbose=1 if smoke_test else 2,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke-test", action="store_true")
    args = parser.parse_args()
    ray.init()
    all_trials = main(args.smoke_test)
    print("Best config:", all_trials.get_best_config("mean_accuracy"))
