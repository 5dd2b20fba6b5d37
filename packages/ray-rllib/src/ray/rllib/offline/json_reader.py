from ray.rllib.offline.json_io import JsonReader

__all__ = ["JsonReader"]
