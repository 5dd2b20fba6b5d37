from ray.rllib.agents.ddpg.apex import APEX_DDPG_DEFAULT_CONFIG, ApexDDPGTrainer
from ray.rllib.agents.ddpg.ddpg import (
    DEFAULT_CONFIG,
    TD3_DEFAULT_CONFIG,
    DDPGConfig,
    DDPGTorchPolicy,
    DDPGTrainer,
    TD3TorchPolicy,
    TD3Trainer,
)

DDPGAgent = DDPGTrainer  # 0.6 name

__all__ = ["APEX_DDPG_DEFAULT_CONFIG", "ApexDDPGTrainer", "DEFAULT_CONFIG", "DDPGAgent", "DDPGConfig", "DDPGTorchPolicy", "DDPGTrainer",
           "TD3TorchPolicy", "TD3Trainer", "TD3_DEFAULT_CONFIG"]
