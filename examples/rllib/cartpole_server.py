"""Serve a CartPole policy over HTTP and train it on what clients report.

Run this, then ``cartpole_client.py`` in another process (or several)::

    python examples/rllib/cartpole_server.py --port 8900
    python examples/rllib/cartpole_client.py --address localhost:8900

The env is an ``ExternalEnv`` whose ``run()`` starts a ``PolicyServer``; the
trainer samples from it exactly as from a simulator, but every step is a
client's request. Prints one JSON line per training iteration.
"""

import argparse
import json

import gymnasium as gym
import numpy as np

import ray
from ray.rllib.agents.registry import get_agent_class
from ray.rllib.env.external_env import ExternalEnv
from ray.rllib.utils.policy_server import PolicyServer
from ray.tune import register_env


class CartpoleServing(ExternalEnv):
    def __init__(self, address: str, port: int):
        super().__init__(gym.spaces.Discrete(2),
                         gym.spaces.Box(low=-10, high=10, shape=(4,), dtype=np.float32))
        self.address, self.port = address, port

    def run(self):
        server = PolicyServer(self, self.address, self.port)
        print(f"policy server listening on {self.address}:{server.port}", flush=True)
        server.serve_forever()


def main(port=8900, run="PPO", iterations=1000, stop_reward=None, config=None):
    register_env("srv", lambda _: CartpoleServing("localhost", port))
    ray.init(num_cpus=1)
    trainer = get_agent_class(run)(env="srv", config=dict({
        "num_workers": 0, "train_batch_size": 1000, "sample_batch_size": 200,
        **({"sgd_minibatch_size": 128, "num_sgd_iter": 10, "lr": 3e-4} if run == "PPO"
           else {}),
    }, **(config or {})))
    result = {}
    try:
        for _ in range(iterations):
            result = trainer.train()
            print(json.dumps({k: result[k] for k in (
                "training_iteration", "timesteps_total", "episodes_total",
                "episode_reward_mean")}), flush=True)
            if stop_reward is not None and result["episode_reward_mean"] >= stop_reward:
                break
    finally:
        trainer.stop()
        ray.shutdown()
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8900, help="0: any free port")
    parser.add_argument("--run", default="PPO")
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--stop-reward", type=float, default=None)
    args = parser.parse_args()
    main(args.port, args.run, args.iterations, args.stop_reward)
