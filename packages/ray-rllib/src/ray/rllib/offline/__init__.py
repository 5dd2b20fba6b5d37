from ray.rllib.offline.io_context import IOContext
from ray.rllib.offline.json_io import InputReader, JsonReader, JsonWriter, OutputWriter

__all__ = ["IOContext", "InputReader", "JsonReader", "JsonWriter", "OutputWriter"]
