"""GeneticSearch with AsyncHyperBand on the Michalewicz function (FEATURES EX-043,
TUNE-109 ``genetic_example``).

f(x) = -sum_i sin(x_i) * sin(i * x_i**2 / pi) ** (2m), m = 10, over five parameters
(four continuous ranges sampled at 100 points and one discrete choice). Its minimum
hides in narrow valleys, a good test for a search that breeds from its best points.
Each trial reports ``neg_mean_loss = -f(x)``; the genetic search maximises it.

    python examples/tune/genetic_example.py                 # full size: 10 generations, 50 -> 32 per generation
    python examples/tune/genetic_example.py --smoke-test    # 2 generations of 10
"""

from __future__ import annotations

import argparse

import numpy as np

import ray
from ray import tune
from ray.tune.automl import ContinuousSpace, DiscreteSpace, GeneticSearch, SearchSpace
from ray.tune.schedulers import AsyncHyperBandScheduler


def michalewicz(x: np.ndarray, m: int = 10) -> float:
    i = np.arange(1, len(x) + 1)
    return float(-np.sum(np.sin(x) * np.sin(i * x**2 / np.pi) ** (2 * m)))


def michalewicz_function(config, reporter):
    x = np.array([config["x1"], config["x2"], config["x3"], config["x4"], config["x5"]])
    reporter(timesteps_total=1, neg_mean_loss=-michalewicz(x))


def main(smoke_test: bool = False, local_dir: str | None = None):
    space = SearchSpace({
        ContinuousSpace("x1", 0, 4, 100),
        ContinuousSpace("x2", -2, 2, 100),
        ContinuousSpace("x3", 1, 5, 100),
        ContinuousSpace("x4", -3, 3, 100),
        DiscreteSpace("x5", [-1, 0, 1, 2, 3]),
    })
    algo = GeneticSearch(
        space,
        reward_attr="neg_mean_loss",
        max_generation=2 if smoke_test else 10,
        population_size=10 if smoke_test else 50,
    )
    scheduler = AsyncHyperBandScheduler(metric="neg_mean_loss", mode="max")
    trials = tune.run(
        michalewicz_function,
        name="genetic_michalewicz",
        search_alg=algo,
        scheduler=scheduler,
        stop={"training_iteration": 100},
        local_dir=local_dir,
        verbose=0 if smoke_test else 1,
    )
    return trials, algo


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke-test", action="store_true")
    args = parser.parse_args()
    ray.init()
    trials, algo = main(args.smoke_test)
    best = algo.best_config()
    print(f"{len(trials)} trials; best config {best}, f = {michalewicz(np.array(list(best.values()))):.4f}")
