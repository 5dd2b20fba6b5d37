from ray.rllib.agents.pg.pg import DEFAULT_CONFIG, PGConfig, PGTorchPolicy, PGTrainer

PGAgent = PGTrainer  # 0.6 name, still used by the 0.7 multi-agent docs

__all__ = ["DEFAULT_CONFIG", "PGAgent", "PGConfig", "PGTorchPolicy", "PGTrainer"]
