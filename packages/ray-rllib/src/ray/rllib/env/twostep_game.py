"""The two-step cooperative matrix game of the QMIX paper (Rashid et al. 2018, fig. 1).

Step 1: agent 0's action picks the second matrix (0 -> 2A, 1 -> 2B); nobody is
rewarded. Step 2: in 2A every joint action pays 7; in 2B the joint actions
pay ``[[0, 1], [1, 8]]``. The optimum (8) needs both agents to commit to 2B
and then to (1, 1) -- VDN's additive value cannot represent it, QMIX can.

Each agent observes the one-hot state (3) and its own id (one-hot, 2). The
team reward is split equally, so a grouped agent's reward is the team's.
"""

from __future__ import annotations

import numpy as np
from gymnasium.spaces import Box, Discrete, Tuple

from ray.rllib.env.multi_agent_env import MultiAgentEnv

PAYOFF_2B = np.array([[0.0, 1.0], [1.0, 8.0]])


class TwoStepGame(MultiAgentEnv):
    observation_space = Box(0.0, 1.0, shape=(5,), dtype=np.float32)
    action_space = Discrete(2)
    agents = (0, 1)

    def __init__(self, env_config=None):
        self.state = 0

    def _obs(self) -> dict:
        out = {}
        for agent in self.agents:
            obs = np.zeros(5, dtype=np.float32)
            obs[self.state] = 1.0
            obs[3 + agent] = 1.0
            out[agent] = obs
        return out

    def reset(self, *, seed=None, options=None):
        self.state = 0
        return self._obs()

    def step(self, action_dict):
        if self.state == 0:
            self.state = 1 if int(action_dict[0]) == 0 else 2
            reward, done = 0.0, False
        else:
            reward = 7.0 if self.state == 1 else float(
                PAYOFF_2B[int(action_dict[0]), int(action_dict[1])])
            done = True
        rewards = {agent: reward / 2 for agent in self.agents}
        dones = {agent: done for agent in self.agents}
        dones["__all__"] = done
        return self._obs(), rewards, dones, {agent: {} for agent in self.agents}

    @classmethod
    def grouped(cls, env_config=None):
        """The game with both agents grouped as ``"group_1"`` (what QMIX trains)."""
        obs = Tuple([cls.observation_space, cls.observation_space])
        act = Tuple([cls.action_space, cls.action_space])
        return cls(env_config).with_agent_groups({"group_1": list(cls.agents)},
                                                 obs_space=obs, act_space=act)


__all__ = ["TwoStepGame"]
