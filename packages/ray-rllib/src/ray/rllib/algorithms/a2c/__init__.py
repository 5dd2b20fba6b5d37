from ray.rllib.agents.a3c import A2CTrainer as A2C
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig


class A2CConfig(AlgorithmConfig):
    """Builder for :class:`A2C` (Ray 2.x API)."""

    algo_class = A2C


__all__ = ["A2C", "A2CConfig"]
