"""Ray 0.7's import path for distributed SGD; the code lives in ``ray.sgd``."""

from ray.sgd import DistributedSGD, Model

__all__ = ["DistributedSGD", "Model"]
