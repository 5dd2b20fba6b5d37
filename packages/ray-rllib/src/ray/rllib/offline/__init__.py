from ray.rllib.offline.io_context import IOContext
from ray.rllib.offline.json_io import (
    InputReader,
    JsonReader,
    JsonWriter,
    NoopOutput,
    OutputWriter,
)
from ray.rllib.offline.mixed_input import MixedInput
from ray.rllib.offline.off_policy_estimator import (
    ImportanceSamplingEstimator,
    OffPolicyEstimate,
    OffPolicyEstimator,
    WeightedImportanceSamplingEstimator,
)
from ray.rllib.offline.shuffled_input import ShuffledInput

__all__ = ["IOContext", "ImportanceSamplingEstimator", "InputReader", "JsonReader",
           "JsonWriter", "MixedInput", "NoopOutput", "OffPolicyEstimate",
           "OffPolicyEstimator", "OutputWriter", "ShuffledInput",
           "WeightedImportanceSamplingEstimator"]
