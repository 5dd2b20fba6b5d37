from ray.rllib.offline.json_io import NoopOutput, OutputWriter

__all__ = ["NoopOutput", "OutputWriter"]
