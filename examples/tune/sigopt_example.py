"""SigOptSearch (FEATURES EX-043 ``sigopt_example``): SigOpt's hosted Bayesian optimiser
suggests the width and height of the synthetic learning curve of
async_hyperband_example.py.

SigOpt is a paid web service: it needs ``pip install sigopt`` and an API token in the
``SIGOPT_KEY`` environment variable. Without either, the script exits straight away
with a message saying which one is missing and how to get it.

    SIGOPT_KEY=... python examples/tune/sigopt_example.py                 # full size: 10 trials x 99 steps
    SIGOPT_KEY=... python examples/tune/sigopt_example.py --smoke-test    # 3 trials x 10 steps
"""

from __future__ import annotations

import argparse
import importlib.util
import os

import ray
from ray import tune


def easy_objective(config, reporter):
    import time

    for i in range(config["iterations"]):
        reporter(timesteps_total=i, episode_reward_mean=(config["height"] - 14) ** 2 - abs(config["width"] - 3))
        time.sleep(0.02)


SPACE = [
    {"name": "width", "type": "int", "bounds": {"min": 0, "max": 20}},
    {"name": "height", "type": "int", "bounds": {"min": -100, "max": 100}},
]


def missing_requirement() -> str | None:
    """Why the example cannot run here, or None when it can."""
    if importlib.util.find_spec("sigopt") is None:
        return "sigopt_example needs the SigOpt client library: pip install sigopt"
    if not os.environ.get("SIGOPT_KEY"):
        return ("sigopt_example needs a SigOpt API token in the SIGOPT_KEY environment variable "
                "(SigOpt is a paid web service: get a token at https://app.sigopt.com/tokens)")
    return None


def main(smoke_test: bool = False, local_dir: str | None = None):
    problem = missing_requirement()
    if problem:
        raise SystemExit(problem)
    from ray.tune.suggest.sigopt import SigOptSearch

    algo = SigOptSearch(SPACE, name="SigOpt Example Experiment", max_concurrent=1,
                        metric="episode_reward_mean", mode="max")
    return tune.run(
        easy_objective,
        name="my_exp",
        search_alg=algo,
        num_samples=3 if smoke_test else 10,
        config={"iterations": 10 if smoke_test else 99},
        stop={"training_iteration": 10 if smoke_test else 99},
        local_dir=local_dir,
        verbose=0 if smoke_test else 1,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke-test", action="store_true")
    args = parser.parse_args()
    if missing_requirement() is None:
        ray.init()
    main(args.smoke_test)
