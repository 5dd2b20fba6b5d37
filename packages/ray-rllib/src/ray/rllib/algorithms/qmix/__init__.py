from ray.rllib.agents.qmix import QMixTrainer as QMix
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig


class QMixConfig(AlgorithmConfig):
    """Builder for :class:`QMix` (Ray 2.x API)."""

    algo_class = QMix


__all__ = ["QMix", "QMixConfig"]
