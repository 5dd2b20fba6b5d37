"""Several copies of a single-agent env stepped as one, for batched inference."""

from __future__ import annotations

import numpy as np

from ray.rllib.env.gym_compat import ensure_new_api


class VectorEnv:
    """Subclass and implement ``vector_reset``, ``reset_at`` and ``vector_step``.

    ``vector_step(actions)`` may return the 0.7 four-tuple
    ``(obs, rewards, dones, infos)`` or the gymnasium five-tuple
    ``(obs, rewards, terminateds, truncateds, infos)``; both are accepted.
    """

    action_space = None
    observation_space = None
    num_envs = 1

    @staticmethod
    def wrap(make_env=None, existing_envs=None, num_envs=1, action_space=None,
             observation_space=None, seed=None):
        return _VectorizedGymEnv(make_env, existing_envs or [], num_envs, seed=seed)

    def vector_reset(self) -> list:
        raise NotImplementedError

    def reset_at(self, index: int):
        raise NotImplementedError

    def vector_step(self, actions):
        raise NotImplementedError

    def get_unwrapped(self) -> list:
        return []

    def close(self) -> None:
        pass


class _VectorizedGymEnv(VectorEnv):
    """``num_envs`` gym envs made by ``make_env(vector_index)``, stepped in a loop.

    Episodes that end are *not* reset here: the sampler resets them so that it
    sees the final observation (needed to bootstrap truncated episodes).
    """

    def __init__(self, make_env, existing_envs, num_envs, seed=None):
        self.envs = [ensure_new_api(e) for e in existing_envs]
        while len(self.envs) < num_envs:
            self.envs.append(ensure_new_api(make_env(len(self.envs))))
        self.num_envs = num_envs
        self.action_space = self.envs[0].action_space
        self.observation_space = self.envs[0].observation_space
        self._seed = seed
        self._seeded: set[int] = set()

    def _next_seed(self, index):
        # Only the first reset of each env is seeded; later resets continue
        # the env's own (seeded) random stream.
        if self._seed is None or index in self._seeded:
            return None
        self._seeded.add(index)
        return self._seed + index

    def vector_reset(self):
        return [self.reset_at(i) for i in range(self.num_envs)]

    def reset_at(self, index):
        obs, _info = self.envs[index].reset(seed=self._next_seed(index))
        return obs

    def vector_step(self, actions):
        obs, rewards, terminateds, truncateds, infos = [], [], [], [], []
        for env, action in zip(self.envs, actions):
            o, r, term, trunc, info = env.step(action)
            obs.append(o)
            rewards.append(r)
            terminateds.append(term)
            truncateds.append(trunc)
            infos.append(info)
        return obs, np.asarray(rewards, dtype=np.float64), terminateds, truncateds, infos

    def get_unwrapped(self):
        return self.envs

    def close(self):
        for env in self.envs:
            env.close()
