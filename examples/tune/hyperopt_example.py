"""HyperOpt TPE search with AsyncHyperBand early stopping (Ray 0.7's hyperopt_example).

    pip install hyperopt
    python examples/tune/hyperopt_example.py [--smoke-test]
"""

import argparse
import time

import ray
from ray.tune import register_trainable, run_experiments
from ray.tune.schedulers import AsyncHyperBandScheduler
from ray.tune.suggest.hyperopt import HyperOptSearch


def easy_objective(config, reporter):
    time.sleep(0.2)
    assert type(config["activation"]) is str, "Config is incorrect: {}".format(type(config["activation"]))
    for i in range(config["iterations"]):
        reporter(
            timesteps_total=i,
            neg_mean_loss=-(config["height"] - 14) ** 2 + abs(config["width"] - 3),
        )
        time.sleep(0.02)


def main(smoke_test: bool = False, local_dir: str | None = None):
    from hyperopt import hp

    register_trainable("exp", easy_objective)
    space = {
        "width": hp.uniform("width", 0, 20),
        "height": hp.uniform("height", -100, 100),
        "activation": hp.choice("activation", ["relu", "tanh"]),
    }
    current_best_params = [
        {"width": 1, "height": 2, "activation": 0},  # activation will be relu
        {"width": 4, "height": 2, "activation": 1},  # activation will be tanh
    ]
    config = {
        "my_exp": {
            "run": "exp",
            "num_samples": 6 if smoke_test else 1000,
            "config": {"iterations": 10 if smoke_test else 100},
            "stop": {"timesteps_total": 9 if smoke_test else 100},
            **({"local_dir": local_dir} if local_dir else {}),
        }
    }
    algo = HyperOptSearch(
        space, max_concurrent=4, metric="neg_mean_loss", mode="max",
        points_to_evaluate=current_best_params,
    )
    scheduler = AsyncHyperBandScheduler(metric="neg_mean_loss", mode="max")
    return run_experiments(config, search_alg=algo, scheduler=scheduler,
                           verbose=0 if smoke_test else 1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke-test", action="store_true", help="Finish quickly for testing")
    args = parser.parse_args()
    ray.init()
    main(args.smoke_test)
