"""`ray.air.integrations.wandb` (Ray 2.x path) = `ray.tune.integration.wandb`."""

from ray.tune.integration.wandb import WandbLoggerCallback

__all__ = ["WandbLoggerCallback"]
