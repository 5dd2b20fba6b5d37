"""`ray.air.integrations.mlflow` (Ray 2.x path) = `ray.tune.integration.mlflow`."""

from ray.tune.integration.mlflow import MLflowLoggerCallback

__all__ = ["MLflowLoggerCallback"]
