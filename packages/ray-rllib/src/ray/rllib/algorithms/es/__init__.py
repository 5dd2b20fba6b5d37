from ray.rllib.agents.es import ESTrainer as ES
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig


class ESConfig(AlgorithmConfig):
    """Builder for :class:`ES` (Ray 2.x API)."""

    algo_class = ES


__all__ = ["ES", "ESConfig"]
