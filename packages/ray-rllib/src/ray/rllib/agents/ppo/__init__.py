from ray.rllib.agents.ppo.appo import APPOTrainer
from ray.rllib.agents.ppo.ppo import DEFAULT_CONFIG, PPOConfig, PPOTorchPolicy, PPOTrainer

PPOAgent = PPOTrainer  # 0.6 name

__all__ = ["APPOTrainer", "DEFAULT_CONFIG", "PPOAgent", "PPOConfig", "PPOTorchPolicy", "PPOTrainer"]
