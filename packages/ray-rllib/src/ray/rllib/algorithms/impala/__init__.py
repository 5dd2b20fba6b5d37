from ray.rllib.agents.impala import ImpalaTrainer as IMPALA
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig


class IMPALAConfig(AlgorithmConfig):
    """Builder for :class:`IMPALA` (Ray 2.x API)."""

    algo_class = IMPALA


__all__ = ["IMPALA", "IMPALAConfig"]
