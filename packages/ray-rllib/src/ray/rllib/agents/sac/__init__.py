from ray.rllib.agents.sac.sac import DEFAULT_CONFIG, SACConfig, SACTorchPolicy, SACTrainer

__all__ = ["DEFAULT_CONFIG", "SACConfig", "SACTorchPolicy", "SACTrainer"]
