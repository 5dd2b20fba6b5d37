"""Learning to play Pong with policy gradients (FEATURES EX-011), after Karpathy's
"Pong from pixels": a 2-layer numpy policy; ``batch_size`` PongEnv actors each play
one game with the current model and return its gradient; the driver sums them and
takes an RMSProp step.

Pong comes from ale-py (>= 0.9 ships the ROM) through gymnasium (``ALE/Pong-v5``,
grayscale frames, frame skip 4, no sticky actions); frames are cropped to the playing
field and downsampled to 80x80 (no OpenCV needed) and the policy sees the difference
of consecutive frames.

    python examples/rl_pong/driver.py --batch-size=10                 # as documented
    python examples/rl_pong/driver.py --smoke                         # 2 short iterations
    python examples/rl_pong/driver.py --batch-size=10 --redis-address=<host:port>

Set OMP_NUM_THREADS/OPENBLAS_NUM_THREADS/MKL_NUM_THREADS=1 before starting so the
actors do not fight over cores (see the troubleshooting note in README.md).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import ray

H = 200  # hidden units
D = 80 * 80  # input: an 80x80 difference frame
GAMMA = 0.99
DECAY_RATE = 0.99  # RMSProp
LEARNING_RATE = 1e-4


def make_env():
    import ale_py
    import gymnasium as gym

    gym.register_envs(ale_py)
    return gym.make("ALE/Pong-v5", obs_type="grayscale", frameskip=4, repeat_action_probability=0.0)


def preprocess(frame: np.ndarray) -> np.ndarray:
    """210x160 grayscale -> the 160x160 playing field -> every other pixel: 6400 floats."""
    return frame[35:195:2, ::2].astype(np.float64).ravel() / 255.0


def init_model(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"W1": rng.normal(size=(H, D)) / np.sqrt(D), "W2": rng.normal(size=H) / np.sqrt(H)}


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def discount_rewards(r: np.ndarray) -> np.ndarray:
    """Discounted returns, restarted at every point scored (a Pong game boundary)."""
    discounted = np.zeros_like(r)
    running = 0.0
    for t in reversed(range(r.size)):
        if r[t] != 0:
            running = 0.0
        running = running * GAMMA + r[t]
        discounted[t] = running
    return discounted


def policy_forward(model, x):
    h = np.maximum(model["W1"] @ x, 0)
    return sigmoid(model["W2"] @ h), h


def policy_backward(model, eph, epx, epdlogp):
    dW2 = eph.T @ epdlogp
    dh = np.outer(epdlogp, model["W2"])
    dh[eph <= 0] = 0
    return {"W1": dh.T @ epx, "W2": dW2}


@ray.remote
class PongEnv:
    def __init__(self, seed: int):
        # One BLAS thread per actor; see the module docstring.
        os.environ["MKL_NUM_THREADS"] = "1"
        self.env = make_env()
        self.rng = np.random.default_rng(seed)
        self.seed = seed

    def compute_gradient(self, model, max_steps: int | None = None):
        """Play one game (or ``max_steps`` agent steps); return (gradient, reward sum, steps)."""
        frame, _ = self.env.reset(seed=int(self.rng.integers(1 << 30)))
        prev = None
        xs, hs, dlogps, rewards = [], [], [], []
        done = False
        while not done:
            cur = preprocess(frame)
            x = cur - prev if prev is not None else np.zeros(D)
            prev = cur
            up_prob, h = policy_forward(model, x)
            action = 2 if self.rng.random() < up_prob else 3  # UP or DOWN
            xs.append(x)
            hs.append(h)
            dlogps.append((1.0 if action == 2 else 0.0) - up_prob)
            frame, reward, terminated, truncated, _ = self.env.step(action)
            rewards.append(reward)
            done = terminated or truncated or (max_steps is not None and len(rewards) >= max_steps)
        epr = discount_rewards(np.array(rewards))
        epr -= epr.mean()
        epr /= epr.std() + 1e-8
        gradient = policy_backward(model, np.vstack(hs), np.vstack(xs), np.array(dlogps) * epr)
        return gradient, float(np.sum(rewards)), len(rewards)


def train(batch_size: int, iterations: int, max_steps: int | None = None) -> list[dict]:
    model = init_model()
    rmsprop_cache = {k: np.zeros_like(v) for k, v in model.items()}
    actors = [PongEnv.remote(i) for i in range(batch_size)]
    history = []
    running_reward = None
    for iteration in range(iterations):
        start = time.perf_counter()
        model_id = ray.put(model)
        # Launch one game per actor with the same model, in parallel.
        results = ray.get([actor.compute_gradient.remote(model_id, max_steps) for actor in actors])
        grad_buffer = {k: np.zeros_like(v) for k, v in model.items()}
        for gradient, reward_sum, _ in results:
            for k in model:
                grad_buffer[k] += gradient[k]
            running_reward = reward_sum if running_reward is None else 0.99 * running_reward + 0.01 * reward_sum
        for k, v in model.items():
            g = grad_buffer[k]
            rmsprop_cache[k] = DECAY_RATE * rmsprop_cache[k] + (1 - DECAY_RATE) * g**2
            model[k] = v + LEARNING_RATE * g / (np.sqrt(rmsprop_cache[k]) + 1e-5)
        seconds = time.perf_counter() - start
        steps = sum(r[2] for r in results)
        history.append({"iteration": iteration + 1, "seconds": seconds, "steps": steps,
                        "mean_reward": float(np.mean([r[1] for r in results])), "running_reward": running_reward})
        print(f"iteration {iteration + 1}: {seconds:.2f} s for {batch_size} games ({steps} steps), "
              f"mean reward {history[-1]['mean_reward']:.1f}, running reward {running_reward:.2f}")
    for actor in actors:
        ray.kill(actor)
    return history


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description="Train a Pong policy with rollout actors.")
    parser.add_argument("--batch-size", default=10, type=int, help="games (actors) per update")
    parser.add_argument("--iterations", default=-1, type=int, help="updates; -1 runs forever")
    parser.add_argument("--smoke", action="store_true", help="2 iterations of 2 games cut at 100 steps")
    parser.add_argument("--redis-address", "--address", dest="address", default=None)
    args = parser.parse_args(argv)
    if not ray.is_initialized():
        ray.init(address=args.address)
    if args.smoke:
        return train(batch_size=2, iterations=2, max_steps=100)
    return train(args.batch_size, args.iterations if args.iterations >= 0 else 1 << 62)


if __name__ == "__main__":
    main()
