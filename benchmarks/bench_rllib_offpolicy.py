"""Off-policy RLlib learning bars (issue 10): train a tuned example, evaluate as it goes.

    python benchmarks/bench_rllib_offpolicy.py cartpole-dqn [--seed 0] [--eval-every 5000]

Every ``--eval-every`` env steps the greedy policy plays ``--eval-episodes``
episodes; the run stops when that eval return reaches the bar or the tuned
example's ``timesteps_total`` is spent. One JSON line: steps at the bar (or
None), wall-clock of training (evaluation excluded), env steps/s, the final
and best eval returns and the machine load.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
import yaml

import ray
import ray.rllib
from ray.rllib.agents.registry import get_agent_class

TUNED_DIR = os.path.join(os.path.dirname(ray.rllib.__file__), "tuned_examples")
BARS = {"cartpole-dqn": 450.0, "cartpole-apex": 150.0, "pendulum-td3": -300.0,
        "pendulum-ddpg": -300.0, "pendulum-sac": -250.0}


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


def run(name: str, seed: int, eval_every: int, eval_episodes: int) -> dict:
    spec = load_spec(name)
    if spec["config"].get("num_workers", 0) and not ray.is_initialized():
        ray.init(num_cpus=spec["config"]["num_workers"] + 1)
    max_steps = spec["stop"]["timesteps_total"]
    bar = BARS[name]
    trainer = get_agent_class(spec["run"])(env=spec["env"], config=dict(spec["config"], seed=seed))
    train_s, next_eval, evals, reached = 0.0, eval_every, [], None
    result = {"timesteps_total": 0}
    try:
        while result["timesteps_total"] < max_steps:
            start = time.perf_counter()
            result = trainer.train()
            train_s += time.perf_counter() - start
            if result["timesteps_total"] >= next_eval or result["timesteps_total"] >= max_steps:
                next_eval += eval_every
                score = evaluate(trainer, spec["env"], eval_episodes, seed)
                evals.append((result["timesteps_total"], round(score, 1)))
                print(f"{name}: {evals[-1]} after {train_s:.0f} s", file=sys.stderr, flush=True)
                if score >= bar:
                    reached = result["timesteps_total"]
                    break
    finally:
        trainer.stop()
    steps = result["timesteps_total"]
    return {
        "benchmark": name, "algorithm": spec["run"], "env": spec["env"], "seed": seed,
        "bar": bar, "steps_at_bar": reached, "steps": steps, "train_s": round(train_s, 1),
        "env_steps_per_s": round(steps / max(train_s, 1e-9), 1),
        "train_episode_reward_mean": round(result.get("episode_reward_mean", float("nan")), 1),
        "best_eval": max(s for _, s in evals), "evals": evals,
        "load_avg": [round(x, 2) for x in os.getloadavg()],
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="+", choices=sorted(BARS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-every", type=int, default=5000)
    parser.add_argument("--eval-episodes", type=int, default=10)
    args = parser.parse_args(argv)
    try:
        for name in args.names:
            print(json.dumps(run(name, args.seed, args.eval_every, args.eval_episodes)),
                  flush=True)
    finally:
        if ray.is_initialized():
            ray.shutdown()


if __name__ == "__main__":
    main()
