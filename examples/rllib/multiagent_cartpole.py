"""Multi-agent training (Ray 0.7 docs): N CartPole agents, M policies, a mapping function."""

import argparse
import random

import gymnasium as gym

import ray
from ray.rllib.agents import pg
from ray.rllib.env import MultiAgentEnv
from ray.tune import register_env


class MultiCartpole(MultiAgentEnv):
    def __init__(self, num):
        self.agents = [gym.make("CartPole-v0") for _ in range(num)]
        self.dones = set()
        self.observation_space = self.agents[0].observation_space
        self.action_space = self.agents[0].action_space

    def reset(self):
        self.dones = set()
        return {i: a.reset()[0] for i, a in enumerate(self.agents)}

    def step(self, action_dict):
        obs, rew, done, info = {}, {}, {}, {}
        for i, action in action_dict.items():
            obs[i], rew[i], term, trunc, info[i] = self.agents[i].step(action)
            done[i] = term or trunc
            if done[i]:
                self.dones.add(i)
        done["__all__"] = len(self.dones) == len(self.agents)
        return obs, rew, done, info


def main(num_agents: int = 4, num_policies: int = 2, iterations: int = 2) -> dict:
    ray.init(num_cpus=2)
    try:
        register_env("multi_cartpole", lambda _: MultiCartpole(num_agents))
        single_env = gym.make("CartPole-v0")
        obs_space, act_space = single_env.observation_space, single_env.action_space
        policies = {
            f"policy_{i}": (None, obs_space, act_space, {"gamma": random.choice([0.95, 0.99])})
            for i in range(num_policies)
        }
        policy_ids = list(policies)
        trainer = pg.PGAgent(env="multi_cartpole", config={
            "multiagent": {
                "policies": policies,
                "policy_mapping_fn": lambda agent_id: random.choice(policy_ids),
            },
            "num_workers": 1,
            "train_batch_size": 400,
        })
        result = {}
        for _ in range(iterations):
            result = trainer.train()
            print(result["episode_reward_mean"], result["policy_reward_mean"])
        trainer.stop()
        return result
    finally:
        ray.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--num-agents", type=int, default=4)
    parser.add_argument("--num-policies", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=2)
    a = parser.parse_args()
    main(a.num_agents, a.num_policies, a.iterations)
