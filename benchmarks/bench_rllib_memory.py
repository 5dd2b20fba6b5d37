"""RLlib memory bar: RSS after 200 training iterations within 10% of RSS after 20.

    python benchmarks/bench_rllib_memory.py [--iterations 200]

PPO on CartPole-v1 in the driver (num_workers=0), small batches so 200
iterations stay short. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import gc
import json

import psutil

from ray.rllib.agents.ppo import PPOTrainer

CONFIG = {"num_workers": 0, "num_envs_per_worker": 4, "sample_batch_size": 64,
          "train_batch_size": 256, "sgd_minibatch_size": 128, "num_sgd_iter": 2,
          "model": {"fcnet_hiddens": [64, 64]}, "seed": 0}


def rss_mb() -> float:
    gc.collect()
    return psutil.Process().memory_info().rss / 2**20


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=200)
    args = parser.parse_args()
    trainer = PPOTrainer(env="CartPole-v1", config=CONFIG)
    rss_20 = None
    for i in range(1, args.iterations + 1):
        trainer.train()
        if i == 20:
            rss_20 = rss_mb()
    rss_end = rss_mb()
    trainer.stop()
    growth = rss_end / rss_20 - 1.0
    print(json.dumps({"bench": "rllib_memory_rss", "iterations": args.iterations,
                      "rss_mb_at_20": round(rss_20, 1), "rss_mb_at_end": round(rss_end, 1),
                      "growth": round(growth, 4), "passed": growth <= 0.10}))


if __name__ == "__main__":
    main()
