"""Evolution Strategies (FEATURES EX-017): worker actors evaluate antithetic
perturbations of a linear policy; the perturbations are slices of one shared block
of Gaussian noise created by a task and put in the object store once, so every
worker reads the same block without its own copy. The driver only ships the
weights (by ``ray.put``) and gets back (noise index, return+, return-).

The documents tune this for Humanoid (MuJoCo); this version defaults to
gymnasium's CartPole-v1 (any Box-observation env works with ``--env``).

    python examples/es/es.py                       # full size: 4 workers, 50 iterations
    python examples/es/es.py --num-workers=2 --iterations=3 --noise-size=100000   # smoke
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import ray


@ray.remote
def create_shared_noise(size: int, seed: int = 123) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(size).astype(np.float32)


class LinearPolicy:
    """action = argmax(W obs) for discrete actions, clip(W obs) for Box actions."""

    def __init__(self, observation_space, action_space):
        self.discrete = hasattr(action_space, "n")
        self.out_dim = action_space.n if self.discrete else action_space.shape[0]
        self.shape = (self.out_dim, observation_space.shape[0])
        self.num_params = int(np.prod(self.shape))
        self.low = None if self.discrete else action_space.low
        self.high = None if self.discrete else action_space.high

    def act(self, theta: np.ndarray, obs: np.ndarray):
        out = theta.reshape(self.shape) @ obs
        return int(np.argmax(out)) if self.discrete else np.clip(out, self.low, self.high)


def make_env(name: str):
    import gymnasium as gym

    return gym.make(name)


@ray.remote
class Worker:
    def __init__(self, env_name: str, noise, worker_seed: int, noise_std: float = 0.05):
        self.env = make_env(env_name)
        self.policy = LinearPolicy(self.env.observation_space, self.env.action_space)
        self.noise = noise  # the shared block: a read-only view, not a copy
        self.rng = np.random.default_rng(worker_seed)
        self.noise_std = noise_std

    def rollout(self, theta, max_steps: int) -> float:
        obs, _ = self.env.reset(seed=int(self.rng.integers(1 << 30)))
        total = 0.0
        for _ in range(max_steps):
            obs, reward, terminated, truncated, _ = self.env.step(self.policy.act(theta, obs))
            total += reward
            if terminated or truncated:
                break
        return total

    def do_rollouts(self, theta, num_pairs: int, max_steps: int = 500):
        """Antithetic pairs: returns [(noise index, R(theta + s*eps), R(theta - s*eps))]."""
        results = []
        n = self.policy.num_params
        for _ in range(num_pairs):
            index = int(self.rng.integers(0, len(self.noise) - n))
            perturbation = self.noise_std * self.noise[index : index + n]
            results.append((index, self.rollout(theta + perturbation, max_steps),
                            self.rollout(theta - perturbation, max_steps)))
        return results


def centered_ranks(x: np.ndarray) -> np.ndarray:
    ranks = np.empty(x.size, dtype=np.float64)
    ranks[x.ravel().argsort()] = np.arange(x.size)
    return (ranks / (x.size - 1) - 0.5).reshape(x.shape)


def train(env_name="CartPole-v1", num_workers=4, iterations=50, pairs_per_worker=5,
          noise_size=10_000_000, step_size=0.05, noise_std=0.05, max_steps=500) -> list[float]:
    noise_id = create_shared_noise.remote(noise_size)
    noise = ray.get(noise_id)
    env = make_env(env_name)
    policy = LinearPolicy(env.observation_space, env.action_space)
    workers = [Worker.remote(env_name, noise_id, seed, noise_std) for seed in range(num_workers)]
    theta = np.zeros(policy.num_params)
    mean_returns = []
    for iteration in range(iterations):
        start = time.perf_counter()
        theta_id = ray.put(theta)
        rollout_ids = [w.do_rollouts.remote(theta_id, pairs_per_worker, max_steps) for w in workers]
        results = [r for batch in ray.get(rollout_ids) for r in batch]
        indices = [r[0] for r in results]
        returns = np.array([[r[1], r[2]] for r in results])
        ranks = centered_ranks(returns)
        weights = ranks[:, 0] - ranks[:, 1]
        n = policy.num_params
        gradient = sum(w * noise[i : i + n] for w, i in zip(weights, indices)) / (len(results) * noise_std)
        theta = theta + step_size * gradient
        mean_returns.append(float(returns.mean()))
        print(f"iteration {iteration + 1}: mean return {mean_returns[-1]:.1f} "
              f"({2 * len(results)} episodes, {time.perf_counter() - start:.2f} s)")
    for worker in workers:
        ray.kill(worker)
    return mean_returns


def main(argv=None) -> list[float]:
    parser = argparse.ArgumentParser(description="Evolution Strategies with a shared noise block.")
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--num-workers", default=4, type=int)
    parser.add_argument("--iterations", default=50, type=int)
    parser.add_argument("--pairs-per-worker", default=5, type=int)
    parser.add_argument("--noise-size", default=10_000_000, type=int, help="floats in the shared block")
    parser.add_argument("--redis-address", "--address", dest="address", default=None)
    args = parser.parse_args(argv)
    if not ray.is_initialized():
        ray.init(address=args.address)
    return train(args.env, args.num_workers, args.iterations, args.pairs_per_worker, args.noise_size)


if __name__ == "__main__":
    main()
