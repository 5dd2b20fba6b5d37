"""A3C with Runner actors and a ``ray.wait`` loop (FEATURES EX-015).

Each Runner actor keeps its own CartPole environment running across calls; given
the latest weights it plays ``num_steps`` steps, computes the actor-critic gradient
(advantages from the value function, GAE with lambda=1) and returns it with how
many steps it used. The driver applies each gradient as soon as it arrives and
sends that runner the new weights: no runner waits for the others.

The documents' version is the universe-starter-agent LSTM policy on Pong;
``rllib train --run=A3C`` (see examples/policy_gradient) is the library version.

    python examples/a3c/a3c.py --num-workers=4                 # full size: 40000 steps
    python examples/a3c/a3c.py --num-workers=2 --total-steps=2000   # smoke
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import ray


def build_policy(obs_dim: int, num_actions: int, seed: int = 0):
    import torch
    from torch import nn

    torch.manual_seed(seed)

    class ActorCritic(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(obs_dim, 64), nn.Tanh())
            self.logits = nn.Linear(64, num_actions)
            self.value = nn.Linear(64, 1)

        def forward(self, obs):
            h = self.body(obs)
            return self.logits(h), self.value(h).squeeze(-1)

    return ActorCritic()


def get_weights(policy):
    return [p.detach().numpy().copy() for p in policy.parameters()]


def set_weights(policy, weights):
    import torch

    with torch.no_grad():
        for p, w in zip(policy.parameters(), weights):
            p.copy_(torch.tensor(w))  # a copy: object-store arrays are read-only


def process_rollout(rewards, values, bootstrap_value, gamma=0.99, lambda_=1.0):
    """(advantages, value targets) by generalized advantage estimation."""
    values = np.append(values, bootstrap_value)
    deltas = rewards + gamma * values[1:] - values[:-1]
    advantages = np.zeros_like(rewards)
    running = 0.0
    for t in reversed(range(len(rewards))):
        running = deltas[t] + gamma * lambda_ * running
        advantages[t] = running
    return advantages, advantages + values[:-1]


@ray.remote
class Runner:
    """Simulates its env continuously; computes gradients for the driver."""

    def __init__(self, env_name: str, actor_id: int, num_steps: int = 20):
        import gymnasium as gym
        import torch

        torch.set_num_threads(1)
        self.torch = torch
        self.env = gym.make(env_name)
        self.obs, _ = self.env.reset(seed=actor_id)
        self.id = actor_id
        self.num_steps = num_steps
        self.policy = build_policy(self.env.observation_space.shape[0], self.env.action_space.n)
        self.episode_reward = 0.0
        self.finished_episodes: list[float] = []

    def compute_gradient(self, params):
        torch = self.torch
        set_weights(self.policy, params)
        observations, actions, rewards, dones = [], [], [], []
        for _ in range(self.num_steps):
            with torch.no_grad():
                logits, _ = self.policy(torch.as_tensor(self.obs, dtype=torch.float32))
            action = int(torch.distributions.Categorical(logits=logits).sample())
            next_obs, reward, terminated, truncated, _ = self.env.step(action)
            observations.append(self.obs)
            actions.append(action)
            rewards.append(reward)
            self.episode_reward += reward
            self.obs = next_obs
            if terminated or truncated:
                self.finished_episodes.append(self.episode_reward)
                self.episode_reward = 0.0
                self.obs, _ = self.env.reset()
                dones.append(True)
                break
            dones.append(False)
        obs_t = torch.as_tensor(np.array(observations), dtype=torch.float32)
        logits, values = self.policy(obs_t)
        with torch.no_grad():
            bootstrap = 0.0 if dones[-1] else float(self.policy(torch.as_tensor(self.obs, dtype=torch.float32))[1])
        advantages, targets = process_rollout(np.array(rewards), values.detach().numpy(), bootstrap)
        dist = torch.distributions.Categorical(logits=logits)
        log_probs = dist.log_prob(torch.as_tensor(actions))
        policy_loss = -(log_probs * torch.as_tensor(advantages, dtype=torch.float32)).sum()
        value_loss = 0.5 * ((values - torch.as_tensor(targets, dtype=torch.float32)) ** 2).sum()
        loss = policy_loss + 0.5 * value_loss - 0.01 * dist.entropy().sum()
        self.policy.zero_grad()
        loss.backward()
        gradient = [p.grad.numpy().copy() for p in self.policy.parameters()]
        info = {"id": self.id, "size": len(rewards), "episodes": self.finished_episodes}
        self.finished_episodes = []
        return gradient, info


def train(num_workers: int = 4, env_name: str = "CartPole-v1", total_steps: int = 40_000, lr: float = 3e-3):
    import gymnasium as gym
    import torch

    env = gym.make(env_name)
    policy = build_policy(env.observation_space.shape[0], env.action_space.n)
    optimizer = torch.optim.Adam(policy.parameters(), lr=lr)
    agents = [Runner.remote(env_name, i) for i in range(num_workers)]
    parameters = get_weights(policy)
    gradient_list = [agent.compute_gradient.remote(parameters) for agent in agents]
    steps, episodes, start = 0, [], time.perf_counter()
    while steps < total_steps:
        # Unblock as soon as the earliest gradient arrives.
        done_id, gradient_list = ray.wait(gradient_list)
        gradient, info = ray.get(done_id)[0]
        steps += info["size"]
        episodes.extend(info["episodes"])
        optimizer.zero_grad()
        for p, g in zip(policy.parameters(), gradient):
            p.grad = torch.tensor(g)  # a copy: object-store arrays are read-only
        optimizer.step()
        parameters = get_weights(policy)
        gradient_list.append(agents[info["id"]].compute_gradient.remote(parameters))
        if info["episodes"] and len(episodes) % 20 < len(info["episodes"]):
            print(f"{steps} steps, {len(episodes)} episodes, mean of last 20 "
                  f"{np.mean(episodes[-20:]):.1f}, {time.perf_counter() - start:.1f} s")
    ray.get(gradient_list)
    for agent in agents:
        ray.kill(agent)
    return policy, episodes


def main(argv=None):
    parser = argparse.ArgumentParser(description="A3C with Runner actors.")
    parser.add_argument("--num-workers", default=4, type=int)
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--total-steps", default=40_000, type=int)
    parser.add_argument("--redis-address", "--address", dest="address", default=None)
    args = parser.parse_args(argv)
    if not ray.is_initialized():
        ray.init(address=args.address)
    return train(args.num_workers, args.env, args.total_steps)


if __name__ == "__main__":
    main()
