"""A Trainer that acts at random: the documented example of a contributed algorithm.

It overrides ``_init`` and ``_train`` directly (the 0.7 contrib API), without
workers or policies.
"""

from __future__ import annotations

import numpy as np

from ray.rllib.agents.config import with_common_config
from ray.rllib.agents.trainer import Trainer
from ray.rllib.env.gym_compat import ensure_new_api

DEFAULT_CONFIG = with_common_config({
    # Episodes to roll out per train() call.
    "rollouts_per_iteration": 10,
})


class RandomAgent(Trainer):
    """Policy that takes random actions and never learns."""

    _name = "RandomAgent"
    _default_config = DEFAULT_CONFIG

    def _init(self, config, env_creator):
        self.env = ensure_new_api(env_creator(config["env_config"]))
        self.workers = None
        self.steps_total = 0

    def _train(self):
        rewards, steps = [], 0
        for _ in range(self.config["rollouts_per_iteration"]):
            self.env.reset()
            done, reward = False, 0.0
            while not done:
                _obs, r, term, trunc, _ = self.env.step(self.env.action_space.sample())
                reward += r
                done = term or trunc
                steps += 1
            rewards.append(reward)
        self.steps_total += steps
        return {"episode_reward_mean": float(np.mean(rewards)), "timesteps_this_iter": steps,
                "timesteps_total": self.steps_total, "episodes_this_iter": len(rewards)}

    def _save(self, checkpoint_dir):
        return {"steps_total": self.steps_total}

    def _restore(self, checkpoint):
        self.steps_total = checkpoint["steps_total"]

    def _stop(self):
        self.env.close()
