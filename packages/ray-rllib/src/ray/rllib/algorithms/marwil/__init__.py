from ray.rllib.agents.marwil import MARWILTrainer as MARWIL
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig


class MARWILConfig(AlgorithmConfig):
    """Builder for :class:`MARWIL` (Ray 2.x API)."""

    algo_class = MARWIL


__all__ = ["MARWIL", "MARWILConfig"]
