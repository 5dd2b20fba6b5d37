"""AsyncHyperBand (ASHA) over a synthetic Trainable class (Ray 0.7's async_hyperband_example).

    python -m ray.tune.examples.async_hyperband_example [--smoke-test]
    (or python examples/tune/async_hyperband_example.py)
"""

import argparse
import json
import os
import random

import numpy as np

import ray
from ray.tune import Trainable, run, sample_from
from ray.tune.schedulers import AsyncHyperBandScheduler


class MyTrainableClass(Trainable):
    """Example agent whose learning curve is a random sigmoid.

    The dummy hyperparameters "width" and "height" determine the slope and maximum reward.
    """

    def _setup(self, config):
        self.timestep = 0

    def _train(self):
        self.timestep += 1
        v = np.tanh(float(self.timestep) / self.config.get("width", 1))
        v *= self.config.get("height", 1)
        # Here we use `episode_reward_mean`, but you can also report other objectives
        # such as loss or accuracy.
        return {"episode_reward_mean": v}

    def _save(self, checkpoint_dir):
        path = os.path.join(checkpoint_dir, "checkpoint")
        with open(path, "w") as f:
            f.write(json.dumps({"timestep": self.timestep}))
        return path

    def _restore(self, checkpoint_path):
        with open(checkpoint_path) as f:
            self.timestep = json.loads(f.read())["timestep"]

    def reset_config(self, new_config):
        self.timestep = 0
        return True


def main(smoke_test: bool = False, local_dir: str | None = None):
    # asynchronous hyperband early stopping, configured with `episode_reward_mean` as the
    # objective and `training_iteration` as the time unit, which is automatically filled
    # by Tune.
    ahb = AsyncHyperBandScheduler(
        time_attr="training_iteration", metric="episode_reward_mean", mode="max",
        grace_period=5, max_t=100,
    )
    return run(
        MyTrainableClass,
        name="asynchyperband_test",
        scheduler=ahb,
        stop={"training_iteration": 10 if smoke_test else 99999},
        num_samples=8 if smoke_test else 20,
        resources_per_trial={"cpu": 1, "gpu": 0},
        config={
            "width": sample_from(lambda spec: 10 + int(90 * random.random())),
            "height": sample_from(lambda spec: int(100 * random.random())),
        },
        local_dir=local_dir,
        verbose=0 if smoke_test else 1,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke-test", action="store_true", help="Finish quickly for testing")
    args = parser.parse_args()
    ray.init()
    main(args.smoke_test)
