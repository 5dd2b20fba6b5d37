from ray.rllib.agents.marwil.marwil import (
    DEFAULT_CONFIG,
    MARWILConfig,
    MARWILTorchPolicy,
    MARWILTrainer,
)

__all__ = ["DEFAULT_CONFIG", "MARWILConfig", "MARWILTorchPolicy", "MARWILTrainer"]
