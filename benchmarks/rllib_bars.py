"""Shared helpers of the issue-10 RLlib learning-bar benchmarks (bench_rllib_<alg>.py).

Each bar trains one algorithm until its target or its step budget, then
prints one JSON object: wall-clock, env steps, env steps/s, the reward reached
(training metric and a deterministic evaluation) and the machine load.
"""

from __future__ import annotations

import json
import os
import time

import gymnasium as gym
import numpy as np

import ray
from ray.rllib.agents.registry import get_agent_class


def evaluate_cartpole(trainer, episodes: int = 10, seed: int = 0) -> float:
    env = gym.make("CartPole-v1")
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


def train_bar(bench: str, run: str, env: str, config: dict, max_steps: int, target: float,
              evaluate=evaluate_cartpole, needs_ray: bool = True, reached=None) -> dict:
    """Train until ``reached(trainer, result)`` (default: ``episode_reward_mean >= target``)
    or ``max_steps``; returns the record."""
    reached = reached or (lambda _trainer, result: result["episode_reward_mean"] >= target)
    load_before = os.getloadavg()[0]
    if needs_ray and not ray.is_initialized():
        ray.init(num_cpus=2)
    start = time.perf_counter()
    trainer = get_agent_class(run)(env=env, config=config)
    result, reached_at = {}, None
    try:
        while not result or result["timesteps_total"] < max_steps:
            result = trainer.train()
            if reached(trainer, result):
                reached_at = result["timesteps_total"]
                break
        wall_s = time.perf_counter() - start
        eval_return = evaluate(trainer)
    finally:
        trainer.stop()
    steps = result["timesteps_total"]
    return {
        "bench": bench,
        "algorithm": run,
        "env": env,
        "target": target,
        "timesteps": steps,
        "budget_timesteps": max_steps,
        "reached_target_at_timesteps": reached_at,
        # None when nothing was simulated (offline input): JSON has no NaN.
        "train_episode_reward_mean": None if np.isnan(result["episode_reward_mean"])
        else round(result["episode_reward_mean"], 2),
        "eval_return_deterministic": round(eval_return, 2),
        "wall_s": round(wall_s, 1),
        "env_steps_per_s": round(steps / wall_s, 1),
        "loadavg_1min_before": round(load_before, 2),
        "loadavg_1min_after": round(os.getloadavg()[0], 2),
        "passed": reached_at is not None and eval_return >= target,
    }


def emit(record: dict) -> None:
    print(json.dumps(record), flush=True)
