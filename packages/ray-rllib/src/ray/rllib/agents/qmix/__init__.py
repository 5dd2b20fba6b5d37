from ray.rllib.agents.qmix.qmix import (
    DEFAULT_CONFIG,
    QMixConfig,
    QMixTorchPolicy,
    QMixTrainer,
    VDNTrainer,
)

QMixAgent = QMixTrainer  # 0.6 name

__all__ = ["DEFAULT_CONFIG", "QMixAgent", "QMixConfig", "QMixTorchPolicy", "QMixTrainer",
           "VDNTrainer"]
