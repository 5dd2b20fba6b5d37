from ray.rllib.agents.a3c.a3c import (
    A2C_DEFAULT_CONFIG,
    DEFAULT_CONFIG,
    A2CTrainer,
    A3CConfig,
    A3CTorchPolicy,
    A3CTrainer,
)

A3CAgent = A3CTrainer  # 0.6 name
A2CAgent = A2CTrainer

__all__ = [
    "A2CAgent",
    "A2CTrainer",
    "A2C_DEFAULT_CONFIG",
    "A3CAgent",
    "A3CConfig",
    "A3CTorchPolicy",
    "A3CTrainer",
    "DEFAULT_CONFIG",
]
