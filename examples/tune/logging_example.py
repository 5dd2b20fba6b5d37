"""Custom loggers and trial names (Ray 0.7's logging_example).

    python examples/tune/logging_example.py [--smoke-test]
"""

import argparse
import json
import os
import random

import numpy as np

import ray
from ray import tune
from ray.tune import Trainable, run


class TestLogger(tune.logger.Logger):
    def on_result(self, result):
        print("TestLogger", result["training_iteration"], result.get("episode_reward_mean"))


def trial_str_creator(trial):
    return f"{trial.trainable_name}_{trial.trial_id}_123"


class MyTrainableClass(Trainable):
    """Example agent whose learning curve is a random sigmoid."""

    def _setup(self, config):
        self.timestep = 0

    def _train(self):
        self.timestep += 1
        v = np.tanh(float(self.timestep) / self.config.get("width", 1))
        v *= self.config.get("height", 1)
        return {"episode_reward_mean": v}

    def _save(self, checkpoint_dir):
        path = os.path.join(checkpoint_dir, "checkpoint")
        with open(path, "w") as f:
            f.write(json.dumps({"timestep": self.timestep}))
        return path

    def _restore(self, checkpoint_path):
        with open(checkpoint_path) as f:
            self.timestep = json.loads(f.read())["timestep"]


def main(smoke_test: bool = False, local_dir: str | None = None):
    return run(
        MyTrainableClass,
        name="hyperband_test",
        num_samples=2 if smoke_test else 5,
        trial_name_creator=tune.function(trial_str_creator),
        loggers=[TestLogger],
        stop={"training_iteration": 1 if smoke_test else 99999},
        config={
            "width": tune.sample_from(lambda spec: 10 + int(90 * random.random())),
            "height": tune.sample_from(lambda spec: int(100 * random.random())),
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
