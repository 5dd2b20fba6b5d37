"""Ray 2.x builder configs of the replay-based algorithms (DQN, Ape-X, DDPG, TD3, SAC).

Their ``training()`` also takes the 2.x spellings of the replay and
exploration settings and maps them onto the documented 0.7 keys:

* ``replay_buffer_config={"capacity", "type", "prioritized_replay_alpha", ...}`` ->
  ``buffer_size``, ``prioritized_replay`` (a type naming "Prioritized"), alpha/beta/eps;
* ``num_steps_sampled_before_learning_starts`` -> ``learning_starts``;
* ``epsilon=[[0, 1.0], [T, eps]]`` or ``exploration_config={"final_epsilon", "epsilon_timesteps"}``
  -> ``exploration_final_eps``, with epsilon annealed over T steps;
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
            self._anneal_epsilon(exploration.get("epsilon_timesteps", 10000),
                                 exploration.get("final_epsilon", 0.02))
        for old, new in _DIRECT.items():
            if old in kwargs:
                kwargs[new] = kwargs.pop(old)
        return super().training(**kwargs)

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
