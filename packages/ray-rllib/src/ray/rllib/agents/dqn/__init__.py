from ray.rllib.agents.dqn.apex import APEX_DEFAULT_CONFIG, ApexTrainer
from ray.rllib.agents.dqn.dqn import (
    DEFAULT_CONFIG,
    SIMPLE_Q_DEFAULT_CONFIG,
    DQNConfig,
    DQNTorchPolicy,
    DQNTrainer,
    SimpleQTrainer,
)

DQNAgent = DQNTrainer  # 0.6 names
ApexAgent = ApexTrainer

__all__ = ["APEX_DEFAULT_CONFIG", "ApexAgent", "ApexTrainer", "DEFAULT_CONFIG", "DQNAgent",
           "DQNConfig", "DQNTorchPolicy", "DQNTrainer", "SIMPLE_Q_DEFAULT_CONFIG",
           "SimpleQTrainer"]
