"""The peer for bench_rllib_offpolicy.py: Stable-Baselines3 TD3 / SAC / DQN, same settings.

Each run mirrors one tuned example (network sizes, learning rates, batch, buffer,
learning starts, noise, one gradient step per env step) and is evaluated the same
way: 10 deterministic episodes every ``--eval-every`` steps, stopping at the bar.
Install SB3 outside the project's venv, e.g.

    pip install --no-deps --target /tmp/sb3pkgs stable-baselines3
    PYTHONPATH=/tmp/sb3pkgs python benchmarks/bench_rllib_sb3_offpolicy.py pendulum-td3
"""

from __future__ import annotations

import argparse
import json
import os
import time

import gymnasium as gym
import numpy as np
import torch

BARS = {"pendulum-td3": -300.0, "pendulum-sac": -250.0, "cartpole-dqn": 450.0}
MAX_STEPS = {"pendulum-td3": 30_000, "pendulum-sac": 20_000, "cartpole-dqn": 100_000}


def make_model(name: str, seed: int):
    from stable_baselines3 import DQN, SAC, TD3
    from stable_baselines3.common.noise import NormalActionNoise

    if name == "pendulum-td3":
        env = gym.make("Pendulum-v1")
        return TD3("MlpPolicy", env, learning_rate=1e-3, buffer_size=200_000,
                   learning_starts=1000, batch_size=100, tau=0.005, gamma=0.98, train_freq=1,
                   gradient_steps=1, policy_delay=2, target_policy_noise=0.2,
                   target_noise_clip=0.5, action_noise=NormalActionNoise(np.zeros(1),
                                                                         0.1 * np.ones(1)),
                   policy_kwargs={"net_arch": [256, 256]}, seed=seed, device="cpu"), env
    if name == "pendulum-sac":
        env = gym.make("Pendulum-v1")
        return SAC("MlpPolicy", env, learning_rate=1e-3, buffer_size=50_000,
                   learning_starts=1000, batch_size=256, tau=0.005, gamma=0.99, train_freq=1,
                   gradient_steps=1, policy_kwargs={"net_arch": [256, 256]}, seed=seed,
                   device="cpu"), env
    env = gym.make("CartPole-v1")
    return DQN("MlpPolicy", env, learning_rate=5e-4, buffer_size=50_000, learning_starts=1000,
               batch_size=64, gamma=0.99, train_freq=4, gradient_steps=1,
               target_update_interval=500, exploration_fraction=0.1,
               exploration_final_eps=0.02, policy_kwargs={"net_arch": [128, 128]}, seed=seed,
               device="cpu"), env


def evaluate(model, env_id: str, episodes: int, seed: int) -> float:
    env = gym.make(env_id)
    returns = []
    for i in range(episodes):
        obs, _ = env.reset(seed=10_000 + 100 * seed + i)
        total, done = 0.0, False
        while not done:
            action, _ = model.predict(obs, deterministic=True)
            obs, reward, term, trunc, _ = env.step(action)
            total += reward
            done = term or trunc
        returns.append(total)
    return float(np.mean(returns))


def run(name: str, seed: int, eval_every: int) -> dict:
    torch.set_num_threads(1)
    model, env = make_model(name, seed)
    env_id = env.spec.id
    train_s, steps, evals, reached = 0.0, 0, [], None
    while steps < MAX_STEPS[name]:
        start = time.perf_counter()
        model.learn(total_timesteps=eval_every, reset_num_timesteps=False)
        train_s += time.perf_counter() - start
        steps = model.num_timesteps
        evals.append((steps, round(evaluate(model, env_id, 10, seed), 1)))
        if evals[-1][1] >= BARS[name]:
            reached = steps
            break
    return {"benchmark": f"sb3-{name}", "seed": seed, "bar": BARS[name],
            "steps_at_bar": reached, "steps": steps, "train_s": round(train_s, 1),
            "env_steps_per_s": round(steps / max(train_s, 1e-9), 1),
            "best_eval": max(s for _, s in evals), "evals": evals,
            "load_avg": [round(x, 2) for x in os.getloadavg()]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="+", choices=sorted(BARS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-every", type=int, default=3000)
    args = parser.parse_args()
    for name in args.names:
        print(json.dumps(run(name, args.seed, args.eval_every)), flush=True)


if __name__ == "__main__":
    main()
