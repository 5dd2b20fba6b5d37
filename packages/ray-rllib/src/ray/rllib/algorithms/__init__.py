"""Ray 2.x import paths: ``ray.rllib.algorithms.<algo>.{<ALGO>, <ALGO>Config}``."""

from ray.rllib.agents.trainer import Trainer as Algorithm
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

__all__ = ["Algorithm", "AlgorithmConfig"]
