"""Per-episode state visible to callbacks: rewards, last observations, custom metrics."""

from __future__ import annotations

import random
from collections import defaultdict
from typing import NamedTuple

import numpy as np

from ray.rllib.env.base_env import _DUMMY_AGENT_ID


class RolloutMetrics(NamedTuple):
    episode_length: int
    episode_reward: float
    agent_rewards: dict
    custom_metrics: dict
    perf_stats: dict


def _call_mapping_fn(fn, agent_id, episode):
    """0.7 mapping functions take ``(agent_id)``; Ray 2.x ones ``(agent_id, episode, worker)``."""
    try:
        return fn(agent_id)
    except TypeError as error:
        if "positional argument" not in str(error):
            raise
        return fn(agent_id, episode, worker=None)


class MultiAgentEpisode:
    """State of one running episode (also used for single-agent envs: one agent).

    ``user_data`` is scratch space for callbacks; values put in
    ``custom_metrics`` are averaged into the training result.
    """

    def __init__(self, policies, policy_mapping_fn, batch_builder_factory=None,
                 extra_batch_callback=None, rng: random.Random | None = None):
        self.new_batch_builder = batch_builder_factory
        self.add_extra_batch = extra_batch_callback
        self.batch_builder = batch_builder_factory() if batch_builder_factory else None
        self.total_reward = 0.0
        self.length = 0
        self.episode_id = (rng or random).randrange(2_000_000_000)
        self.agent_rewards: dict = defaultdict(float)
        self.custom_metrics: dict = {}
        self.user_data: dict = {}
        self._policies = policies
        self._policy_mapping_fn = policy_mapping_fn
        self._next_agent_index = 0
        self._agent_to_index: dict = {}
        self._agent_to_policy: dict = {}
        self._agent_to_rnn_state: dict = {}
        self._agent_to_last_obs: dict = {}
        self._agent_to_last_raw_obs: dict = {}
        self._agent_to_last_info: dict = {}
        self._agent_to_last_action: dict = {}
        self._agent_to_last_pi_info: dict = {}
        self._agent_to_prev_action: dict = {}
        self._agent_reward_history: dict = defaultdict(list)

    def soft_reset(self) -> None:
        """Clear the counters but keep the agents (``soft_horizon``)."""
        self.length = 0
        self.episode_id = random.randrange(2_000_000_000)
        for agent_id in self._agent_reward_history:
            self._agent_reward_history[agent_id] = []

    def policy_for(self, agent_id=_DUMMY_AGENT_ID):
        """The policy id this agent is bound to (chosen on its first appearance)."""
        if agent_id not in self._agent_to_policy:
            self._agent_to_policy[agent_id] = _call_mapping_fn(
                self._policy_mapping_fn, agent_id, self)
        return self._agent_to_policy[agent_id]

    def last_observation_for(self, agent_id=_DUMMY_AGENT_ID):
        return self._agent_to_last_obs.get(agent_id)

    def last_raw_obs_for(self, agent_id=_DUMMY_AGENT_ID):
        return self._agent_to_last_raw_obs.get(agent_id)

    def last_info_for(self, agent_id=_DUMMY_AGENT_ID):
        return self._agent_to_last_info.get(agent_id)

    def last_action_for(self, agent_id=_DUMMY_AGENT_ID):
        if agent_id in self._agent_to_last_action:
            return self._agent_to_last_action[agent_id]
        space = self._policies[self.policy_for(agent_id)].action_space
        return np.zeros(space.shape, dtype=space.dtype) if space.shape else 0

    def prev_action_for(self, agent_id=_DUMMY_AGENT_ID):
        if agent_id in self._agent_to_prev_action:
            return self._agent_to_prev_action[agent_id]
        return np.zeros_like(self.last_action_for(agent_id))

    def prev_reward_for(self, agent_id=_DUMMY_AGENT_ID) -> float:
        history = self._agent_reward_history[agent_id]
        return history[-2] if len(history) >= 2 else 0.0

    def rnn_state_for(self, agent_id=_DUMMY_AGENT_ID) -> list:
        if agent_id not in self._agent_to_rnn_state:
            policy = self._policies[self.policy_for(agent_id)]
            self._agent_to_rnn_state[agent_id] = policy.get_initial_state()
        return self._agent_to_rnn_state[agent_id]

    def last_pi_info_for(self, agent_id=_DUMMY_AGENT_ID) -> dict:
        return self._agent_to_last_pi_info.get(agent_id, {})

    def _agent_index(self, agent_id) -> int:
        if agent_id not in self._agent_to_index:
            self._agent_to_index[agent_id] = self._next_agent_index
            self._next_agent_index += 1
        return self._agent_to_index[agent_id]

    def _add_agent_rewards(self, reward_dict: dict) -> None:
        for agent_id, reward in reward_dict.items():
            if reward is not None:
                self.agent_rewards[agent_id, self.policy_for(agent_id)] += reward
                self.total_reward += reward
                self._agent_reward_history[agent_id].append(reward)

    def _set_rnn_state(self, agent_id, rnn_state) -> None:
        self._agent_to_rnn_state[agent_id] = rnn_state

    def _set_last_observation(self, agent_id, obs, raw_obs=None, info=None) -> None:
        self._agent_to_last_obs[agent_id] = obs
        self._agent_to_last_raw_obs[agent_id] = obs if raw_obs is None else raw_obs
        if info is not None:
            self._agent_to_last_info[agent_id] = info

    def _set_last_action(self, agent_id, action) -> None:
        if agent_id in self._agent_to_last_action:
            self._agent_to_prev_action[agent_id] = self._agent_to_last_action[agent_id]
        self._agent_to_last_action[agent_id] = action

    def _set_last_pi_info(self, agent_id, pi_info) -> None:
        self._agent_to_last_pi_info[agent_id] = pi_info

    def rollout_metrics(self, perf_stats=None) -> RolloutMetrics:
        return RolloutMetrics(
            self.length, self.total_reward, dict(self.agent_rewards),
            dict(self.custom_metrics), perf_stats or {},
        )
