from ray.rllib.agents.a3c import A3CTrainer as A3C
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig


class A3CConfig(AlgorithmConfig):
    """Builder for :class:`A3C` (Ray 2.x API)."""

    algo_class = A3C


__all__ = ["A3C", "A3CConfig"]
