"""RLlib learning bars from the tuned examples: train until the YAML's stop, then evaluate.

    python benchmarks/bench_rllib_tuned.py cartpole-a2c [--seeds 0 1 2]
    python benchmarks/bench_rllib_tuned.py pendulum-ppo cartpole-pg cartpole-ppo

Bars (issue 9): PPO CartPole-v1 deterministic eval >= 450 within 100k steps;
A2C CartPole-v1 >= 450 within 500k; PG CartPole >= 150; PPO Pendulum-v1 >= -300
within 400k. One JSON line per run (wall-clock, steps, train and eval returns).
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import yaml

import ray.rllib  # noqa: F401
from ray.rllib.agents.registry import get_agent_class

TUNED_DIR = os.path.join(os.path.dirname(ray.rllib.__file__), "tuned_examples")
BARS = {"cartpole-ppo": 450.0, "cartpole-a2c": 450.0, "cartpole-pg": 150.0,
        "pendulum-ppo": -300.0}


def load_spec(name: str) -> dict:
    with open(os.path.join(TUNED_DIR, f"{name}.yaml")) as f:
        return yaml.safe_load(f)[name]


def evaluate(trainer, env_id: str, episodes: int, seed: int) -> float:
    import gymnasium as gym

    env = gym.make(env_id)
    returns = []
    for i in range(episodes):
        obs, _ = env.reset(seed=10_000 + 100 * seed + i)
        total, done = 0.0, False
        while not done:
            obs, reward, term, trunc, _ = env.step(trainer.compute_action(obs, explore=False))
            total += reward
            done = term or trunc
        returns.append(total)
    return float(np.mean(returns))


def run(name: str, seed: int, eval_episodes: int = 10) -> dict:
    spec = load_spec(name)
    stop = spec["stop"]
    start = time.perf_counter()
    trainer = get_agent_class(spec["run"])(env=spec["env"], config=dict(spec["config"], seed=seed))
    result = {}
    while not result or not _stopped(result, stop):
        result = trainer.train()
    train_s = time.perf_counter() - start
    eval_return = evaluate(trainer, spec["env"], eval_episodes, seed)
    trainer.stop()
    bar = BARS.get(name)
    return {
        "bench": f"rllib_{name}", "seed": seed, "timesteps": result["timesteps_total"],
        "train_wall_s": round(train_s, 2), "train_episode_reward_mean": result[
            "episode_reward_mean"], "eval_return_deterministic": eval_return,
        "bar": bar, "passed": bar is None or eval_return >= bar,
    }


def _stopped(result: dict, stop: dict) -> bool:
    return any(result.get(k) is not None and result[k] >= v for k, v in stop.items())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("names", nargs="+", choices=sorted(BARS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    args = parser.parse_args()
    for name in args.names:
        for seed in args.seeds:
            print(json.dumps(run(name, seed)), flush=True)


if __name__ == "__main__":
    main()
