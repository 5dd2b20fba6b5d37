"""``DistributedSGD`` and its ``Model`` interface."""

from ray.sgd.distributed.model import Model
from ray.sgd.distributed.sgd import DistributedSGD

__all__ = ["DistributedSGD", "Model"]
