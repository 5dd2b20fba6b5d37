"""PPO on CartPole-v1: deterministic evaluation return after 100k env steps, and wall-clock.

Bar (issue 9): eval return >= 450 within 100,000 steps in <= 45 s on 2 cores, 3 of 3 seeds.
Hyperparameters follow rl-zoo's tuned PPO CartPole (8 envs x 32 steps, 20 epochs,
GAE lambda 0.8, gamma 0.98, lr 1e-3 decayed linearly to 0), with a 64x64 MLP.

    python benchmarks/bench_rllib_ppo_cartpole.py [--seeds 0 1 2] [--steps 100000]

Prints one JSON object per seed and a summary line.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

import ray  # noqa: F401  (ray-core provides the namespace)
from ray.rllib.agents.ppo import PPOTrainer


def ppo_cartpole_config(seed: int, total_steps: int) -> dict:
    return {
        "num_workers": 0,
        "num_envs_per_worker": 8,
        "sample_batch_size": 32,
        "train_batch_size": 256,
        "sgd_minibatch_size": 256,
        "num_sgd_iter": 20,
        "lambda": 0.8,
        "gamma": 0.98,
        "lr": 1e-3,
        "lr_schedule": [[0, 1e-3], [total_steps, 0.0]],
        "clip_param": 0.2,
        "kl_coeff": 0.0,
        "entropy_coeff": 0.0,
        "vf_clip_param": 1e6,
        "vf_loss_coeff": 0.5,
        "grad_clip": 0.5,
        "model": {"fcnet_hiddens": [64, 64]},
        "seed": seed,
    }


def evaluate(trainer, episodes: int, seed: int) -> float:
    import gymnasium as gym

    env = gym.make("CartPole-v1")
    returns = []
    for i in range(episodes):
        obs, _ = env.reset(seed=10_000 + seed * 100 + i)
        total, done = 0.0, False
        while not done:
            action = trainer.compute_action(obs, explore=False)
            obs, reward, terminated, truncated, _ = env.step(action)
            total += reward
            done = terminated or truncated
        returns.append(total)
    return float(np.mean(returns))


def run(seed: int, total_steps: int) -> dict:
    start = time.perf_counter()
    trainer = PPOTrainer(env="CartPole-v1", config=ppo_cartpole_config(seed, total_steps))
    result = {}
    while not result or result["timesteps_total"] < total_steps:
        result = trainer.train()
    train_s = time.perf_counter() - start
    eval_return = evaluate(trainer, 10, seed)
    trainer.stop()
    return {
        "bench": "rllib_ppo_cartpole_v1",
        "seed": seed,
        "timesteps": result["timesteps_total"],
        "train_wall_s": round(train_s, 2),
        "train_episode_reward_mean": result["episode_reward_mean"],
        "eval_return_deterministic": eval_return,
        "passed": eval_return >= 450 and train_s <= 45,
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=100_000)
    args = parser.parse_args()
    results = [run(seed, args.steps) for seed in args.seeds]
    for r in results:
        print(json.dumps(r))
    print(json.dumps({"bench": "rllib_ppo_cartpole_v1_summary",
                      "passed_seeds": sum(r["passed"] for r in results),
                      "seeds": len(results)}))


if __name__ == "__main__":
    main()
