from ray.rllib.agents.ars import ARSTrainer as ARS
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig


class ARSConfig(AlgorithmConfig):
    """Builder for :class:`ARS` (Ray 2.x API)."""

    algo_class = ARS


__all__ = ["ARS", "ARSConfig"]
