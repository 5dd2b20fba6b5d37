"""BayesOptSearch (pip install bayesian-optimization) with AsyncHyperBand.

    python examples/tune/bayesopt_example.py [--smoke-test]
"""

import argparse
import time

import ray
from ray.tune import run
from ray.tune.schedulers import AsyncHyperBandScheduler
from ray.tune.suggest.bayesopt import BayesOptSearch


def easy_objective(config, reporter):
    time.sleep(0.05)
    for i in range(config["iterations"]):
        reporter(timesteps_total=i,
                 neg_mean_loss=-(config["height"] - 14) ** 2 + abs(config["width"] - 3))
        time.sleep(0.01)


def main(smoke_test: bool = False, local_dir: str | None = None):
    space = {"width": (0, 20), "height": (-100, 100)}
    algo = BayesOptSearch(space, max_concurrent=4, metric="neg_mean_loss", mode="max",
                          utility_kwargs={"kind": "ucb", "kappa": 2.5, "xi": 0.0})
    scheduler = AsyncHyperBandScheduler(metric="neg_mean_loss", mode="max")
    return run(easy_objective, name="my_exp", search_alg=algo, scheduler=scheduler,
               num_samples=6 if smoke_test else 1000,
               stop={"training_iteration": 5 if smoke_test else 100},
               config={"iterations": 100}, local_dir=local_dir, verbose=0 if smoke_test else 1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke-test", action="store_true")
    args = parser.parse_args()
    ray.init()
    main(args.smoke_test)
