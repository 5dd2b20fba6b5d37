from ray.rllib.offline.json_io import JsonWriter

__all__ = ["JsonWriter"]
