from ray.rllib.agents.pg import PGTrainer as PG
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig


class PGConfig(AlgorithmConfig):
    """Builder for :class:`PG` (Ray 2.x API)."""

    algo_class = PG


__all__ = ["PG", "PGConfig"]
