"""ray.sgd: distributed PyTorch training on Ray actors.

- ``PyTorchTrainer``: replicas are actors joined by ``torch.distributed``
  (DistributedDataParallel; gloo on CPU, nccl on GPU).
- ``DistributedSGD``: synchronous SGD whose gradients travel through the
  object store, averaged on the driver ("simple") or by sharded
  parameter-server actors ("ps").
- ``ray.sgd.weights``: a model's weights as one flat numpy vector.
"""

from ray.sgd import (
    _require_core,  # noqa: F401
    weights,
)
from ray.sgd.distributed import DistributedSGD, Model
from ray.sgd.errors import RendezvousTimeoutError, TrainingFailedError
from ray.sgd.pytorch import PyTorchTrainer, utils
from ray.sgd.resources import Resources

__all__ = [
    "DistributedSGD",
    "Model",
    "PyTorchTrainer",
    "RendezvousTimeoutError",
    "Resources",
    "TrainingFailedError",
    "utils",
    "weights",
]
