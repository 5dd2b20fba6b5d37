from ray.rllib.agents.dqn.dqn import DEFAULT_CONFIG, DQNConfig, DQNTorchPolicy, DQNTrainer

DQNAgent = DQNTrainer  # 0.6 name

__all__ = ["DEFAULT_CONFIG", "DQNAgent", "DQNConfig", "DQNTorchPolicy", "DQNTrainer"]
