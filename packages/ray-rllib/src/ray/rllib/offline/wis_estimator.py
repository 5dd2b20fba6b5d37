from ray.rllib.offline.off_policy_estimator import WeightedImportanceSamplingEstimator

__all__ = ["WeightedImportanceSamplingEstimator"]
