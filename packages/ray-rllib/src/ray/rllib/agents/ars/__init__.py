from ray.rllib.agents.ars.ars import DEFAULT_CONFIG, ARSConfig, ARSTrainer

ARSAgent = ARSTrainer  # 0.6 name

__all__ = ["ARSAgent", "ARSConfig", "ARSTrainer", "DEFAULT_CONFIG"]
