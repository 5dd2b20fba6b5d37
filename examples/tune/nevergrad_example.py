"""NevergradSearch (pip install nevergrad) with an instrumented OnePlusOne optimizer.

(OnePlusOne rather than NGOpt: NGOpt leaves a non-daemon thread that can hang the
interpreter at exit with scipy 1.17.)

    python examples/tune/nevergrad_example.py [--smoke-test]
"""

import argparse
import time

import ray
from ray.tune import run
from ray.tune.schedulers import AsyncHyperBandScheduler
from ray.tune.suggest.nevergrad import NevergradSearch


def easy_objective(config, reporter):
    time.sleep(0.05)
    for i in range(config["iterations"]):
        reporter(timesteps_total=i,
                 neg_mean_loss=-(config["height"] - 14) ** 2 + abs(config["width"] - 3))
        time.sleep(0.01)


def main(smoke_test: bool = False, local_dir: str | None = None):
    try:
        import nevergrad as ng
    except ImportError as exc:
        raise SystemExit(f"nevergrad_example needs nevergrad, which is not installed ({exc}): "
                         "pip install nevergrad") from exc

    instrumentation = ng.p.Instrumentation(
        height=ng.p.Scalar(lower=-100, upper=100), width=ng.p.Scalar(lower=0, upper=20)
    )
    optimizer = ng.optimizers.OnePlusOne(parametrization=instrumentation, budget=100)
    algo = NevergradSearch(optimizer, None, max_concurrent=4, metric="neg_mean_loss", mode="max")
    scheduler = AsyncHyperBandScheduler(metric="neg_mean_loss", mode="max")
    return run(easy_objective, name="nevergrad", search_alg=algo, scheduler=scheduler,
               num_samples=6 if smoke_test else 50,
               stop={"training_iteration": 5 if smoke_test else 100},
               config={"iterations": 100}, local_dir=local_dir, verbose=0 if smoke_test else 1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke-test", action="store_true")
    args = parser.parse_args()
    ray.init()
    main(args.smoke_test)
