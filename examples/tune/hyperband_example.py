"""Synchronous HyperBand with a checkpointable Trainable (Ray 0.7's hyperband_example).

    python examples/tune/hyperband_example.py [--smoke-test]
"""

import argparse
import random

import numpy as np

import ray
from ray.tune import Trainable, run, sample_from
from ray.tune.schedulers import HyperBandScheduler


class MyTrainableClass(Trainable):
    """Example agent whose learning curve is a random sigmoid (checkpointable: HyperBand
    pauses trials at its milestones)."""

    def _setup(self, config):
        self.timestep = 0

    def _train(self):
        self.timestep += 1
        v = np.tanh(float(self.timestep) / self.config.get("width", 1))
        v *= self.config.get("height", 1)
        return {"episode_reward_mean": v}

    def _save(self, checkpoint_dir):
        return {"timestep": self.timestep}

    def _restore(self, checkpoint):
        self.timestep = checkpoint["timestep"]


def main(smoke_test: bool = False, local_dir: str | None = None):
    # Hyperband early stopping, configured with `episode_reward_mean` as the objective and
    # `training_iteration` as the time unit, which is automatically filled by Tune.
    hyperband = HyperBandScheduler(
        time_attr="training_iteration", metric="episode_reward_mean", mode="max",
        max_t=9 if smoke_test else 100,
    )
    return run(
        MyTrainableClass,
        name="hyperband_test",
        num_samples=6 if smoke_test else 20,
        stop={"training_iteration": 9 if smoke_test else 99999},
        config={
            "width": sample_from(lambda spec: 10 + int(90 * random.random())),
            "height": sample_from(lambda spec: int(100 * random.random())),
        },
        scheduler=hyperband,
        local_dir=local_dir,
        verbose=0 if smoke_test else 1,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke-test", action="store_true")
    args = parser.parse_args()
    ray.init()
    main(args.smoke_test)
