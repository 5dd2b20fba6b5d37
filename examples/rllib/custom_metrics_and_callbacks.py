"""Callbacks and custom metrics (Ray 0.7 docs), run under Tune."""

import argparse

import numpy as np

import ray
from ray import tune


def on_episode_start(info):
    episode = info["episode"]
    print(f"episode {episode.episode_id} started")
    episode.user_data["pole_angles"] = []


def on_episode_step(info):
    episode = info["episode"]
    pole_angle = abs(episode.last_observation_for()[2])
    episode.user_data["pole_angles"].append(pole_angle)


def on_episode_end(info):
    episode = info["episode"]
    pole_angle = np.mean(episode.user_data["pole_angles"])
    print(f"episode {episode.episode_id} ended with length {episode.length} and pole angles {pole_angle}")
    episode.custom_metrics["pole_angle"] = pole_angle


def on_train_result(info):
    print("trainer.train() result: {} -> {} episodes".format(
        info["trainer"].__name__, info["result"]["episodes_this_iter"]))


def main(iterations: int = 2):
    ray.init(num_cpus=2)
    try:
        return tune.run(
            "PG",
            stop={"training_iteration": iterations},
            config={
                "env": "CartPole-v0",
                "num_workers": 0,
                "callbacks": {
                    "on_episode_start": tune.function(on_episode_start),
                    "on_episode_step": tune.function(on_episode_step),
                    "on_episode_end": tune.function(on_episode_end),
                    "on_train_result": tune.function(on_train_result),
                },
            },
        )
    finally:
        ray.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=2)
    main(parser.parse_args().iterations)
