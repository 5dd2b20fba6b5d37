"""``ray.rllib.agents.td3``: TD3 lives beside DDPG (it is DDPG with the TD3 tricks on)."""

from ray.rllib.agents.ddpg.ddpg import TD3_DEFAULT_CONFIG as DEFAULT_CONFIG
from ray.rllib.agents.ddpg.ddpg import TD3TorchPolicy, TD3Trainer

__all__ = ["DEFAULT_CONFIG", "TD3TorchPolicy", "TD3Trainer"]
