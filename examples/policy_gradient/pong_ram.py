"""Policy gradients with RLlib (FEATURES EX-012, EX-015): what
``rllib train --env=Pong-ram-v4 --run=PPO`` (or ``--run=A3C``) does, from Python.

ale-py >= 0.9 no longer registers the ``-ram`` ids, so this script registers
``Pong-ram-v4`` with ``tune.register_env`` as ``ALE/Pong-v5`` with RAM observations
(128 bytes, scaled to [0, 1]). Any other gymnasium id (``CartPole-v1``,
``ALE/Pong-v5``) goes straight through as a name.

    python examples/policy_gradient/pong_ram.py --run=PPO --env=Pong-ram-v4      # full size
    python examples/policy_gradient/pong_ram.py --run=A3C --env=Pong-ram-v4 --config='{"num_workers": 4}'
    rllib train --env=CartPole-v0 --run=PPO                  # the CLI, for registered gymnasium ids
"""

from __future__ import annotations

import argparse
import json

import numpy as np

import ray
import ray.rllib  # noqa: F401  (registers the algorithms with Tune)
from ray import tune


def make_pong_ram(env_config=None):
    import ale_py
    import gymnasium as gym

    gym.register_envs(ale_py)
    env = gym.make("ALE/Pong-v5", obs_type="ram", max_episode_steps=(env_config or {}).get("max_episode_steps"))
    low, high = np.zeros(128, np.float32), np.ones(128, np.float32)
    return gym.wrappers.TransformObservation(
        env, lambda obs: obs.astype(np.float32) / 255.0, gym.spaces.Box(low, high, dtype=np.float32)
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", default="PPO", help="an RLlib algorithm name: PPO, A3C, ...")
    parser.add_argument("--env", default="Pong-ram-v4")
    parser.add_argument("--config", default="{}", type=json.loads)
    parser.add_argument("--stop", default='{"timesteps_total": 1000000}', type=json.loads)
    parser.add_argument("--local-dir", default=None)
    parser.add_argument("--redis-address", "--address", dest="address", default=None)
    args = parser.parse_args(argv)
    # Tune publishes its registry in the GCS, so the trainer and the rollout workers,
    # in their own processes, find the name.
    tune.register_env("Pong-ram-v4", make_pong_ram)
    started = not ray.is_initialized()
    if started:
        ray.init(address=args.address)
    try:
        trials = tune.run(args.run, config={"env": args.env, **args.config}, stop=args.stop,
                          local_dir=args.local_dir, verbose=1)
    finally:
        if started:
            ray.shutdown()
    return trials


if __name__ == "__main__":
    main()
