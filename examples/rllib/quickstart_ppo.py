"""The RLlib Python API quick start (Ray 0.7 docs), trimmed to a few iterations.

    python examples/rllib/quickstart_ppo.py [--iterations 3]
"""

import argparse

import ray
import ray.rllib.agents.ppo as ppo
from ray.tune.logger import pretty_print


def main(iterations: int = 3, num_workers: int = 1) -> dict:
    ray.init(num_cpus=2)
    try:
        config = ppo.DEFAULT_CONFIG.copy()
        config["num_gpus"] = 0
        config["num_workers"] = num_workers
        config["train_batch_size"] = 400
        config["sgd_minibatch_size"] = 64
        config["num_sgd_iter"] = 3
        trainer = ppo.PPOTrainer(config=config, env="CartPole-v0")
        result = {}
        for i in range(iterations):
            # Perform one iteration of training the policy with PPO.
            result = trainer.train()
            print(pretty_print(result))
            if i % 100 == 0:
                checkpoint = trainer.save()
                print("checkpoint saved at", checkpoint)
        trainer.stop()
        return result
    finally:
        ray.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=3)
    main(parser.parse_args().iterations)
