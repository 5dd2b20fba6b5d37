from ray.rllib.agents.ppo.appo import APPOTrainer as APPO
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig


class APPOConfig(AlgorithmConfig):
    """Builder for :class:`APPO` (Ray 2.x API)."""

    algo_class = APPO


__all__ = ["APPO", "APPOConfig"]
