"""Ray 0.7's ``ray.experimental.sgd.pytorch.utils``."""

from ray.sgd.pytorch.utils import Resources, sgd_mse_optimizer

__all__ = ["Resources", "sgd_mse_optimizer"]
