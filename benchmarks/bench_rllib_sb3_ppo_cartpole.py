"""The peer for bench_rllib_ppo_cartpole.py: Stable-Baselines3 PPO on CartPole-v1, 100k steps.

Same hyperparameters (rl-zoo's tuned PPO CartPole: 8 envs x 32 steps, batch 256,
20 epochs, GAE 0.8, gamma 0.98, lr 1e-3 -> 0 and clip 0.2 -> 0 linearly, 64x64 MLP).
Install SB3 outside the project's venv, e.g.

    pip install --no-deps --target /tmp/sb3pkgs stable-baselines3
    PYTHONPATH=/tmp/sb3pkgs python benchmarks/bench_rllib_sb3_ppo_cartpole.py --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import json
import time

import gymnasium as gym
import numpy as np
import torch


def run(seed: int, total_steps: int) -> dict:
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    torch.set_num_threads(1)
    start = time.perf_counter()
    env = make_vec_env("CartPole-v1", n_envs=8, seed=seed)
    model = PPO("MlpPolicy", env, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98,
                n_epochs=20, ent_coef=0.0, learning_rate=lambda f: 1e-3 * f,
                clip_range=lambda f: 0.2 * f, seed=seed, device="cpu", verbose=0)
    model.learn(total_timesteps=total_steps)
    train_s = time.perf_counter() - start
    eval_env = gym.make("CartPole-v1")
    returns = []
    for i in range(10):
        obs, _ = eval_env.reset(seed=10_000 + seed * 100 + i)
        total, done = 0.0, False
        while not done:
            action, _ = model.predict(obs, deterministic=True)
            obs, reward, term, trunc, _ = eval_env.step(int(action))
            total += reward
            done = term or trunc
        returns.append(total)
    return {"bench": "sb3_ppo_cartpole_v1", "seed": seed, "timesteps": total_steps,
            "train_wall_s": round(train_s, 2), "eval_return_deterministic": float(np.mean(returns))}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=100_000)
    args = parser.parse_args()
    for seed in args.seeds:
        print(json.dumps(run(seed, args.steps)), flush=True)


if __name__ == "__main__":
    main()
