"""The interface a ``DistributedSGD`` model implements (Ray 0.7's ``sgd.Model``)."""

from __future__ import annotations

import abc

import torch

__all__ = ["Model"]


class Model(torch.nn.Module, abc.ABC):
    """A ``torch.nn.Module`` that owns its input pipeline and optimizer.

    ``model_creator(worker_index, device_index)`` returns one of these per
    device; every replica must have the same architecture.
    """

    @abc.abstractmethod
    def get_loss(self) -> torch.Tensor:
        """The scalar loss on this replica's next batch (graph attached)."""

    @abc.abstractmethod
    def get_optimizer(self) -> torch.optim.Optimizer:
        """The optimizer over ``self.parameters()``; created once and reused."""

    def get_metrics(self) -> dict[str, float]:
        """Extra numbers ``step(fetch_stats=True)`` averages and reports."""
        return {}
