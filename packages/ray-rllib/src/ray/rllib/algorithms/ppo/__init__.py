from ray.rllib.agents.ppo import PPOTrainer as PPO
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig


class PPOConfig(AlgorithmConfig):
    """Builder for :class:`PPO` (Ray 2.x API)."""

    algo_class = PPO


__all__ = ["PPO", "PPOConfig"]
