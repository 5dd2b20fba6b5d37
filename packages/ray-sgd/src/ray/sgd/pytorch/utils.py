"""Creator helpers and the typed description of one replica's job."""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Callable
from typing import Any

import torch

from ray.sgd.resources import Resources

__all__ = ["Resources", "ReplicaSpec", "resolve_loss_and_optimizer", "sgd_mse_optimizer"]


def sgd_mse_optimizer(model: torch.nn.Module, config: dict) -> tuple[torch.nn.Module, Any]:
    """The default ``optimizer_creator``: mean squared error and plain SGD.

    The learning rate is ``config["lr"]`` (default 1e-4).
    """
    return torch.nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=config.get("lr", 1e-4))


def resolve_loss_and_optimizer(
    model: torch.nn.Module,
    config: dict,
    optimizer_creator: Callable,
    loss_creator: Callable | None,
) -> tuple[Callable, torch.optim.Optimizer]:
    """Call the user's creators in either documented style.

    Ray 0.7: ``optimizer_creator(model, config) -> (loss, optimizer)``.
    Later: ``optimizer_creator(model, config) -> optimizer`` plus a
    ``loss_creator`` that is a loss class (``torch.nn.MSELoss``) or
    ``loss_creator(config) -> loss``.
    """
    created = optimizer_creator(model, config)
    if loss_creator is None:
        if not (isinstance(created, tuple) and len(created) == 2):
            raise TypeError(
                "optimizer_creator(model, config) returned "
                f"{type(created).__name__}; without a loss_creator it must return "
                "(loss, optimizer), e.g. (torch.nn.MSELoss(), torch.optim.SGD(...)), "
                "or pass loss_creator=torch.nn.MSELoss"
            )
        loss, optimizer = created
    else:
        optimizer = created[1] if isinstance(created, tuple) else created
        if isinstance(loss_creator, type) and issubclass(loss_creator, torch.nn.Module):
            loss = loss_creator()
        else:
            loss = loss_creator(config)
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(
            f"optimizer_creator must create a torch.optim.Optimizer, got {type(optimizer).__name__}"
        )
    if not callable(loss):
        raise TypeError(f"the loss must be callable (a torch.nn loss), got {type(loss).__name__}")
    return loss, optimizer


@dataclasses.dataclass(frozen=True)
class ReplicaSpec:
    """Everything a replica needs to build its part of the job (shipped to actors)."""

    model_creator: Callable
    data_creator: Callable
    optimizer_creator: Callable = sgd_mse_optimizer
    loss_creator: Callable | None = None
    config: dict = dataclasses.field(default_factory=dict)
    batch_size_per_replica: int = 16
    backend: str = "gloo"
    use_gpu: bool = False
    timeout_s: float = 30.0
    num_threads: int = 1
    shuffle: bool = True
    seed: int = 0


def split_batch_size(batch_size: int, num_replicas: int) -> int:
    """Each replica's share of the global batch (the global batch is one update)."""
    if batch_size < 1 or num_replicas < 1:
        raise ValueError(
            f"batch_size and num_replicas must be positive, got {batch_size} and {num_replicas}"
        )
    if batch_size % num_replicas:
        raise ValueError(
            f"batch_size={batch_size} is the global batch of one update and must be a "
            f"multiple of num_replicas={num_replicas}; try batch_size="
            f"{max(1, batch_size // num_replicas) * num_replicas}"
        )
    return batch_size // num_replicas


def choose_backend(backend: str, use_gpu: bool) -> str:
    """``"auto"`` is nccl on GPUs and gloo on CPUs."""
    if backend == "auto":
        return "nccl" if use_gpu else "gloo"
    if backend not in ("gloo", "nccl", "mpi"):
        raise ValueError(f"backend must be 'auto', 'gloo', 'nccl' or 'mpi', got {backend!r}")
    if backend == "nccl" and not use_gpu:
        raise ValueError("backend='nccl' needs GPUs: pass use_gpu=True, or use backend='gloo'")
    return backend


def local_ip_address() -> str:
    """An address of this host that the other replicas can reach."""
    try:
        import ray.util

        return ray.util.get_node_ip_address()
    except Exception:  # noqa: BLE001 - any failure falls back to the socket probe
        pass
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        # connect() on UDP sends nothing; it only picks the outgoing interface.
        probe.connect(("10.255.255.255", 1))
        return probe.getsockname()[0]
    except OSError:
        return "127.0.0.1"
    finally:
        probe.close()
