"""PBT over RLlib's PPO on CartPole (FEATURES EX-042 ``pbt_ppo_example``).

Each population member is a PPO trainer (PyTorch policy, gymnasium's CartPole-v1).
Every few iterations PopulationBasedTraining copies the best members' checkpoints into
the worst and perturbs their PPO hyperparameters. Some combinations cannot train (a
minibatch larger than the batch it is cut from, zero SGD epochs), so a custom explore
function repairs the config after the built-in perturbation, as the documents' example
does for Humanoid.

    python examples/tune/pbt_ppo_example.py                 # full size: 4 members, to reward 450 or 40 iterations
    python examples/tune/pbt_ppo_example.py --smoke-test    # 2 members x 3 small iterations
"""

from __future__ import annotations

import argparse
import random

import ray
from ray import tune
from ray.tune.schedulers import PopulationBasedTraining


def explore(config: dict) -> dict:
    """Keep a perturbed config trainable: at least two minibatches per batch, one SGD epoch."""
    if config["train_batch_size"] < config["sgd_minibatch_size"] * 2:
        config["train_batch_size"] = config["sgd_minibatch_size"] * 2
    if config["num_sgd_iter"] < 1:
        config["num_sgd_iter"] = 1
    return config


def main(smoke_test: bool = False, local_dir: str | None = None):
    pbt = PopulationBasedTraining(
        time_attr="training_iteration",
        metric="episode_reward_mean",
        mode="max",
        perturbation_interval=2 if smoke_test else 4,
        resample_probability=0.25,
        # Specifies the mutations of these hyperparams.
        hyperparam_mutations={
            "lambda": lambda: random.uniform(0.9, 1.0),
            "clip_param": lambda: random.uniform(0.1, 0.4),
            "lr": [1e-3, 5e-4, 1e-4, 5e-5],
            "num_sgd_iter": lambda: random.randint(1, 15),
            "sgd_minibatch_size": lambda: random.randint(32, 256),
            "train_batch_size": lambda: random.randint(400, 2000),
        },
        custom_explore_fn=explore,
    )
    return tune.run(
        "PPO",
        name="pbt_cartpole",
        scheduler=pbt,
        num_samples=2 if smoke_test else 4,
        stop={"training_iteration": 3} if smoke_test else {"episode_reward_mean": 450, "training_iteration": 40},
        config={
            "env": "CartPole-v1",
            "num_workers": 0,
            "num_gpus": 0,
            "observation_filter": "MeanStdFilter",
            # These params are tuned from a fixed starting value.
            "lambda": 0.95,
            "clip_param": 0.2,
            "lr": 5e-4,
            # These params start off randomly drawn from a set.
            "num_sgd_iter": tune.sample_from(lambda spec: random.choice([2, 3] if smoke_test else [5, 10, 15])),
            "sgd_minibatch_size": tune.sample_from(lambda spec: random.choice([64, 128])),
            "train_batch_size": tune.sample_from(lambda spec: random.choice([256, 400] if smoke_test
                                                                             else [1000, 2000])),
        },
        local_dir=local_dir,
        verbose=0 if smoke_test else 1,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke-test", action="store_true")
    args = parser.parse_args()
    ray.init()
    analysis = main(args.smoke_test)
    print("Best config:", analysis.get_best_config("episode_reward_mean"))
