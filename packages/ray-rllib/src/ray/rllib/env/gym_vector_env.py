"""gymnasium's vector envs (``gymnasium.vector.VectorEnv``) as RLlib VectorEnvs.

An env creator may return a gymnasium vector env -- e.g.
``gym.make_vec("CartPole-v1", num_envs=16, vectorization_mode="vector_entry_point")``,
whose classic-control envs step all copies in one numpy operation -- and the sampler
steps it as one batch (its ``num_envs`` replaces ``num_envs_per_worker``).

gymnasium resets finished copies itself; all three of its autoreset modes work:

* ``SAME_STEP``: the finishing step returns the reset observation and the final one in
  ``infos["final_obs"]``: the sampler gets the final one, ``reset_at`` the reset one;
* ``DISABLED``: ``reset_at(i)`` resets copy ``i`` alone (``options={"reset_mask": ...}``);
* ``NEXT_STEP`` (gymnasium's default, and the only mode of the ``vector_entry_point``
  envs): the step after the finishing one ignores that copy's action and returns its
  reset observation. ``autoreset_next_step`` tells the sampler, which then starts the
  copy's next episode from that observation and records no transition for it.
"""

from __future__ import annotations

import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import iterate

from ray.rllib.env.vector_env import VectorEnv


class GymVectorEnv(VectorEnv):
    def __init__(self, venv, seed=None):
        self.venv = venv
        self.num_envs = int(venv.num_envs)
        self.observation_space = venv.single_observation_space
        self.action_space = venv.single_action_space
        self.mode = venv.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        if isinstance(self.mode, str):
            self.mode = AutoresetMode(self.mode)
        self.autoreset_next_step = self.mode == AutoresetMode.NEXT_STEP
        self._seed = seed
        self._pending_reset_obs: dict = {}

    def _split(self, obs) -> list:
        return list(iterate(self.venv.observation_space, obs))

    def vector_reset(self) -> list:
        obs, _infos = self.venv.reset(seed=self._seed)
        self._seed = None  # later resets continue the seeded streams
        self._pending_reset_obs.clear()
        return self._split(obs)

    def reset_at(self, index: int):
        if index in self._pending_reset_obs:
            return self._pending_reset_obs.pop(index)
        if self.mode == AutoresetMode.DISABLED:
            mask = np.zeros(self.num_envs, dtype=bool)
            mask[index] = True
            obs, _infos = self.venv.reset(options={"reset_mask": mask})
            return self._split(obs)[index]
        raise RuntimeError(
            "this gymnasium vector env resets finished copies on the next step "
            "(AutoresetMode.NEXT_STEP); the sampler must not reset copies itself. A horizon "
            "shorter than the env's own time limit cannot be applied: set "
            "max_episode_steps when making the vector env instead")

    def vector_step(self, actions):
        obs, rewards, terminateds, truncateds, infos = self.venv.step(np.asarray(actions))
        per_env = self._split(obs)
        done = np.logical_or(terminateds, truncateds)
        if self.mode == AutoresetMode.SAME_STEP and done.any():
            final_obs = infos.get("final_obs")
            for i in np.flatnonzero(done):
                self._pending_reset_obs[int(i)] = per_env[i]
                per_env[i] = final_obs[i]
        return (per_env, np.asarray(rewards, dtype=np.float64), list(terminateds),
                list(truncateds), [{} for _ in range(self.num_envs)])

    def get_unwrapped(self) -> list:
        return [self.venv]

    def close(self) -> None:
        self.venv.close()


__all__ = ["GymVectorEnv"]
