from ray.rllib.offline.json_io import InputReader

__all__ = ["InputReader"]
