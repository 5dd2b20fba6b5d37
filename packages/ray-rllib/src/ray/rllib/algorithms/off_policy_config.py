"""Ray 2.x builder configs of the replay-based algorithms (DQN, Ape-X, DDPG, TD3, SAC).

Their ``training()`` also takes the 2.x spellings of the replay and
exploration settings and maps them onto the documented 0.7 keys:

* ``replay_buffer_config={"capacity", "type", "prioritized_replay_alpha", ...}`` ->
  ``buffer_size``, ``prioritized_replay`` (a type naming "Prioritized"), alpha/beta/eps;
* ``num_steps_sampled_before_learning_starts`` -> ``learning_starts``;
* ``epsilon=[[0, 1.0], [T, eps]]`` or ``exploration_config={"final_epsilon", "epsilon_timesteps"}``
  -> ``exploration_final_eps``, with epsilon annealed over T steps;
* ``exploration_config={"type": "ParameterNoise", "initial_stddev", "random_timesteps",
  "sub_exploration"}`` (in ``training()`` or ``exploration()``) -> ``parameter_noise``,
  ``parameter_noise_initial_stddev``, ``pure_exploration_steps`` (DDPG/TD3) and the
  sub-exploration's epsilon schedule or OU/Gaussian scales (parameter noise's target);
* SAC: ``q_model_config`` / ``policy_model_config`` / ``optimization_config`` ->
  ``Q_model`` / ``policy_model`` / ``optimization``.
"""

from __future__ import annotations

from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

_DIRECT = {
    "num_steps_sampled_before_learning_starts": "learning_starts",
    "q_model_config": "Q_model",
    "policy_model_config": "policy_model",
    "optimization_config": "optimization",
}


class OffPolicyConfig(AlgorithmConfig):
    def training(self, **kwargs) -> AlgorithmConfig:
        replay = kwargs.pop("replay_buffer_config", None)
        if replay:
            self._replay_buffer(dict(replay))
        epsilon = kwargs.pop("epsilon", None)
        if epsilon:
            (_t0, _e0), (steps, final) = epsilon[0], epsilon[-1]
            self._anneal_epsilon(steps, final)
        exploration = kwargs.pop("exploration_config", None)
        if exploration:
            self._exploration(dict(exploration))
        for old, new in _DIRECT.items():
            if old in kwargs:
                kwargs[new] = kwargs.pop(old)
        return super().training(**kwargs)

    def exploration(self, *, explore=None, exploration_config=None) -> AlgorithmConfig:
        """Ray 2.x ``.exploration(explore=..., exploration_config={...})``."""
        if explore is not None:
            self._config["explore"] = bool(explore)
        if exploration_config:
            self._exploration(dict(exploration_config))
        return self

    def _exploration(self, exploration: dict) -> None:
        kind = str(exploration.pop("type", "")).rsplit(".", 1)[-1]
        if kind == "ParameterNoise":
            self._parameter_noise(exploration)
        elif kind in ("OrnsteinUhlenbeckNoise", "GaussianNoise"):
            self._action_noise(kind, exploration)
        else:
            self._anneal_epsilon(exploration.get("epsilon_timesteps", 10000),
                                 exploration.get("final_epsilon", 0.02))

    def _parameter_noise(self, exploration: dict) -> None:
        self._config["parameter_noise"] = True
        if "initial_stddev" in exploration:
            self._config["parameter_noise_initial_stddev"] = float(
                exploration.pop("initial_stddev"))
        if "random_timesteps" in exploration:
            steps = int(exploration.pop("random_timesteps"))
            if "pure_exploration_steps" not in self.algo_class._default_config:
                raise ValueError(f"{self.algo_class.__name__} has no uniform-random warm-up "
                                 "(its epsilon schedule starts at 1): drop random_timesteps "
                                 "from the ParameterNoise exploration_config")
            self._config["pure_exploration_steps"] = steps
        sub = exploration.pop("sub_exploration", None)
        if sub:
            self._exploration(dict(sub))
        if exploration:
            raise ValueError(f"unknown ParameterNoise exploration_config keys "
                             f"{sorted(exploration)}: use initial_stddev, random_timesteps, "
                             "sub_exploration")

    def _action_noise(self, kind: str, exploration: dict) -> None:
        """DDPG/TD3 action noise (also parameter noise's target distance)."""
        if kind == "GaussianNoise":
            self._config["exploration_noise_type"] = "gaussian"
            keys = {"stddev": "exploration_gaussian_sigma",
                    "random_timesteps": "pure_exploration_steps"}
        else:
            self._config["exploration_noise_type"] = "ou"
            keys = {"ou_theta": "exploration_ou_theta", "ou_sigma": "exploration_ou_sigma",
                    "ou_base_scale": "exploration_ou_noise_scale",
                    "random_timesteps": "pure_exploration_steps"}
        if float(exploration.pop("initial_scale", 1.0)) != 1.0:
            raise ValueError(f"{kind} initial_scale must be 1.0 here (the noise scale anneals "
                             "from 1 to final_scale): scale stddev/ou_base_scale instead")
        if "final_scale" in exploration:
            self._config["exploration_should_anneal"] = True
            self._config["exploration_final_scale"] = float(exploration.pop("final_scale"))
        if "scale_timesteps" in exploration:
            horizon = self._config.get("schedule_max_timesteps", 100000)
            self._config["exploration_fraction"] = min(
                1.0, float(exploration.pop("scale_timesteps")) / horizon)
        unknown = sorted(set(exploration) - set(keys))
        if unknown:
            raise ValueError(f"unknown {kind} exploration_config keys {unknown}: use "
                             f"{', '.join(sorted(keys))}, initial_scale, final_scale, "
                             "scale_timesteps")
        for key, value in exploration.items():
            self._config[keys[key]] = value

    def _replay_buffer(self, replay: dict) -> None:
        buffer_type = str(replay.pop("type", ""))
        if buffer_type:
            self._config["prioritized_replay"] = "Prioritized" in buffer_type
        if "capacity" in replay:
            self._config["buffer_size"] = int(replay.pop("capacity"))
        for key in ("prioritized_replay_alpha", "prioritized_replay_beta",
                    "prioritized_replay_eps"):
            if key in replay:
                self._config[key] = replay.pop(key)
        if replay:
            raise ValueError(f"unknown replay_buffer_config keys {sorted(replay)}: use "
                             "capacity, type, prioritized_replay_alpha/beta/eps")

    def _anneal_epsilon(self, steps: int, final: float) -> None:
        horizon = self._config.get("schedule_max_timesteps", 100000)
        self._config["exploration_final_eps"] = float(final)
        self._config["exploration_fraction"] = min(1.0, float(steps) / horizon)


__all__ = ["OffPolicyConfig"]
