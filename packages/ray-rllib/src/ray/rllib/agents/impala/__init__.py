from ray.rllib.agents.impala.impala import (
    DEFAULT_CONFIG,
    ImpalaConfig,
    ImpalaTrainer,
    VTraceTorchPolicy,
)

ImpalaAgent = ImpalaTrainer  # 0.6 name

__all__ = ["DEFAULT_CONFIG", "ImpalaAgent", "ImpalaConfig", "ImpalaTrainer",
           "VTraceTorchPolicy"]
