from ray.rllib.contrib.random_agent.random_agent import DEFAULT_CONFIG, RandomAgent

__all__ = ["DEFAULT_CONFIG", "RandomAgent"]
