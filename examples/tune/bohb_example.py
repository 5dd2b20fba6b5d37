"""BOHB: TuneBOHB (the model) with HyperBandForBOHB (the brackets) over a ConfigSpace space
(Ray 0.7's bohb_example; the Ray 2.x import paths work too: ray.tune.search.bohb).

    python examples/tune/bohb_example.py [--smoke-test]
"""

import argparse

import ConfigSpace as CS

import ray
from ray.tune import run
from ray.tune.examples.async_hyperband_example import MyTrainableClass
from ray.tune.schedulers.hb_bohb import HyperBandForBOHB
from ray.tune.suggest.bohb import TuneBOHB


def main(smoke_test: bool = False, local_dir: str | None = None):
    # BOHB models its search space with ConfigSpace.
    config_space = CS.ConfigurationSpace(seed=0)
    config_space.add(CS.UniformFloatHyperparameter("height", lower=10, upper=100))
    config_space.add(CS.UniformFloatHyperparameter("width", lower=0, upper=100))

    experiment_metrics = dict(metric="episode_reward_mean", mode="max")
    bohb_hyperband = HyperBandForBOHB(time_attr="training_iteration", max_t=100,
                                      reduction_factor=4, **experiment_metrics)
    bohb_search = TuneBOHB(config_space, max_concurrent=4, seed=0, **experiment_metrics)
    return run(
        MyTrainableClass,
        name="bohb_test",
        scheduler=bohb_hyperband,
        search_alg=bohb_search,
        num_samples=10,
        stop={"training_iteration": 10 if smoke_test else 100},
        local_dir=local_dir,
        verbose=0 if smoke_test else 1,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke-test", action="store_true", help="Finish quickly for testing")
    args = parser.parse_args()
    ray.init()
    main(args.smoke_test)
