from ray.rllib.offline.off_policy_estimator import ImportanceSamplingEstimator

__all__ = ["ImportanceSamplingEstimator"]
