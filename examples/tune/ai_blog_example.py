"""The toy from the Ray/Tune blog post: `my_func` with alpha/beta grids, stop at accuracy 100.

    python examples/tune/ai_blog_example.py [--smoke-test]
"""

import argparse

import ray
from ray.tune import grid_search, register_trainable, run_experiments


def my_func(config, reporter):
    import time

    i = 0
    while True:
        reporter(timesteps_total=i, mean_accuracy=i ** config["alpha"])
        i += config["beta"]
        time.sleep(0.001)


def main(smoke_test: bool = False, local_dir: str | None = None):
    register_trainable("my_func", my_func)
    return run_experiments(
        {
            "my_experiment": {
                "run": "my_func",
                "resources": {"cpu": 1, "gpu": 0},
                # i ** 0.2 needs 10**10 steps to reach 100: the smoke test also stops on time.
                "stop": {"mean_accuracy": 100, **({"timesteps_total": 30} if smoke_test else {})},
                "config": {
                    "alpha": grid_search([0.2, 0.4, 0.6]),
                    "beta": grid_search([1, 2]),
                },
                **({"local_dir": local_dir} if local_dir else {}),
            }
        },
        verbose=0 if smoke_test else 2,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke-test", action="store_true")
    args = parser.parse_args()
    ray.init()
    main(args.smoke_test)
