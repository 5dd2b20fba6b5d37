"""AsyncHyperBand (ASHA) over a synthetic Trainable class (Ray 0.7's async_hyperband_example).

    python examples/tune/async_hyperband_example.py [--smoke-test]

The trainable and the run live in the package (`ray.tune.examples.async_hyperband_example`,
where Ray's tests and docs import `MyTrainableClass` from).
"""

import argparse

import ray
from ray.tune.examples.async_hyperband_example import MyTrainableClass, main

__all__ = ["MyTrainableClass", "main"]

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke-test", action="store_true", help="Finish quickly for testing")
    args = parser.parse_args()
    ray.init()
    main(args.smoke_test)
