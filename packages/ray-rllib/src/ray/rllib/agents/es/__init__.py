from ray.rllib.agents.es.es import DEFAULT_CONFIG, ESConfig, ESTrainer

ESAgent = ESTrainer  # 0.6 name

__all__ = ["DEFAULT_CONFIG", "ESAgent", "ESConfig", "ESTrainer"]
