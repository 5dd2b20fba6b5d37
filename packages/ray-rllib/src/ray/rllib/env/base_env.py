"""The lowest-level env interface: many envs, many agents, polled asynchronously.

Everything converts to a BaseEnv for the general sampler::

    gym.Env -> VectorEnv -> BaseEnv      MultiAgentEnv -> BaseEnv      ExternalEnv -> BaseEnv

``poll()`` returns five dicts keyed ``env_id -> agent_id -> value``
(observations, rewards, dones with ``"__all__"``, infos, off-policy actions);
``send_actions`` answers the agents that were just polled.
"""

from __future__ import annotations

from ray.rllib.env.multi_agent_env import MultiAgentEnv, normalize_reset, normalize_step
from ray.rllib.env.vector_env import VectorEnv

_DUMMY_AGENT_ID = "agent0"


class BaseEnv:
    action_space = None
    observation_space = None

    @staticmethod
    def to_base_env(env, make_env=None, num_envs=1, remote_envs=False,
                    remote_env_batch_wait_ms=0) -> BaseEnv:
        from ray.rllib.env.external_env import ExternalEnv, _ExternalEnvToBaseEnv

        if isinstance(env, BaseEnv):
            return env
        if isinstance(env, MultiAgentEnv):
            return _MultiAgentEnvToBaseEnv(make_env, [env], num_envs)
        if isinstance(env, ExternalEnv):
            if num_envs != 1:
                raise ValueError("ExternalEnv does not support num_envs_per_worker > 1")
            return _ExternalEnvToBaseEnv(env)
        if not isinstance(env, VectorEnv):
            env = VectorEnv.wrap(make_env=make_env, existing_envs=[env], num_envs=num_envs)
        return _VectorEnvToBaseEnv(env)

    def poll(self):
        raise NotImplementedError

    def send_actions(self, action_dict) -> None:
        raise NotImplementedError

    def try_reset(self, env_id):
        return None

    def get_unwrapped(self) -> list:
        return []

    def stop(self) -> None:
        pass


class _VectorEnvToBaseEnv(BaseEnv):
    def __init__(self, vector_env: VectorEnv):
        self.vector_env = vector_env
        self.action_space = vector_env.action_space
        self.observation_space = vector_env.observation_space
        self.num_envs = vector_env.num_envs
        self.new_obs = None
        self.cur = ({}, {}, {}, {})

    def poll(self):
        if self.new_obs is None:
            self.new_obs = self.vector_env.vector_reset()
            self.cur = ([0.0] * self.num_envs, [False] * self.num_envs, [{}] * self.num_envs)
        rewards, dones, infos = self.cur
        obs = {i: {_DUMMY_AGENT_ID: o} for i, o in enumerate(self.new_obs)}
        out = (
            obs,
            {i: {_DUMMY_AGENT_ID: r} for i, r in enumerate(rewards)},
            {i: {_DUMMY_AGENT_ID: d, "__all__": d} for i, d in enumerate(dones)},
            {i: {_DUMMY_AGENT_ID: inf} for i, inf in enumerate(infos)},
            {},
        )
        self.new_obs = []
        return out

    def send_actions(self, action_dict):
        actions = [action_dict[i][_DUMMY_AGENT_ID] for i in range(self.num_envs)]
        out = self.vector_env.vector_step(actions)
        if len(out) == 5:
            obs, rewards, terms, truncs, infos = out
            dones = [a or b for a, b in zip(terms, truncs)]
        else:
            obs, rewards, dones, infos = out
        self.new_obs = obs
        self.cur = (list(rewards), list(dones), list(infos))

    def try_reset(self, env_id):
        return {_DUMMY_AGENT_ID: self.vector_env.reset_at(env_id)}

    def get_unwrapped(self):
        return self.vector_env.get_unwrapped()


class _MultiAgentEnvToBaseEnv(BaseEnv):
    def __init__(self, make_env, existing_envs, num_envs):
        self.envs = list(existing_envs)
        while len(self.envs) < num_envs:
            self.envs.append(make_env(len(self.envs)))
        self.num_envs = num_envs
        self.dones = set()
        self.pending = {}
        for i, env in enumerate(self.envs):
            self.pending[i] = (normalize_reset(env.reset()), {}, {"__all__": False}, {})

    def poll(self):
        obs, rewards, dones, infos = {}, {}, {}, {}
        for env_id, (o, r, d, inf) in self.pending.items():
            obs[env_id], rewards[env_id], dones[env_id], infos[env_id] = o, r, d, inf
            if d.get("__all__"):
                self.dones.add(env_id)
        self.pending = {}
        return obs, rewards, dones, infos, {}

    def send_actions(self, action_dict):
        for env_id, actions in action_dict.items():
            if env_id in self.dones:
                raise ValueError(f"env {env_id} is done; reset it before sending actions")
            o, r, d, inf = normalize_step(self.envs[env_id].step(actions))
            d.setdefault("__all__", False)
            for agent_id in o:
                inf.setdefault(agent_id, {})
            self.pending[env_id] = (o, r, d, inf)

    def try_reset(self, env_id):
        obs = normalize_reset(self.envs[env_id].reset())
        self.dones.discard(env_id)
        return obs

    def get_unwrapped(self):
        return self.envs
