"""One training replica: a model, its data shard and its torch.distributed group.

``PyTorchRunner`` is a plain class: the trainer runs it as a Ray actor, and the
tests also run it in plain processes. Every replica holds the whole model;
DistributedDataParallel averages gradients across replicas in ``backward()``,
so every replica applies the same update and the parameters stay identical.

Data order: the training set is split by ``DistributedSampler`` (shuffled with
``seed + epoch``), so replica ``r`` of ``n`` takes indices ``r, r+n, ...`` of
the epoch's permutation and its ``k``-th batch of ``B/n`` samples is a slice of
the permutation's ``k``-th block of ``B``: ``n`` replicas see exactly the
samples one replica with batch ``B`` would. The position (epoch, batch) is part
of the state, so ``set_state`` resumes mid-epoch on the same samples.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler

from ray.sgd.errors import RendezvousTimeoutError, TrainingFailedError
from ray.sgd.pytorch.utils import ReplicaSpec, local_ip_address, resolve_loss_and_optimizer

__all__ = ["PyTorchRunner", "StepStats"]


@dataclasses.dataclass(frozen=True)
class StepStats:
    """What one replica did in one ``train``/``validate`` call (sums, so they merge)."""

    rank: int
    epoch: int
    num_steps: int
    num_samples: int
    loss_sum: float
    correct: int = 0
    has_accuracy: bool = False
    elapsed_s: float = 0.0


class PyTorchRunner:
    """A replica. Call ``open_rendezvous`` on rank 0, then ``setup`` on all."""

    def __init__(self, spec: ReplicaSpec, rank: int, world_size: int):
        self.spec = spec
        self.rank = rank
        self.world_size = world_size
        self.epoch = 0
        self.batch_index = 0
        self._batches = None
        self._store = None
        torch.set_num_threads(max(1, spec.num_threads))
        self.device = torch.device("cuda", 0) if spec.use_gpu else torch.device("cpu")

    # -- group setup ------------------------------------------------------

    def open_rendezvous(self) -> tuple[str, int]:
        """Rank 0 hosts the rendezvous store; returns its (host, port)."""
        host = local_ip_address()
        self._store = dist.TCPStore(
            host,
            0,
            self.world_size,
            is_master=True,
            timeout=datetime.timedelta(seconds=self.spec.timeout_s),
            wait_for_workers=False,
        )
        return host, self._store.port

    def setup(self, address: tuple[str, int]) -> int:
        """Build model and data, then join the group. Returns the process id."""
        spec = self.spec
        self.model = spec.model_creator(spec.config).to(self.device)
        self.criterion, self.optimizer = resolve_loss_and_optimizer(
            self.model, spec.config, spec.optimizer_creator, spec.loss_creator
        )
        self.train_set, self.validation_set = spec.data_creator(spec.config)
        self._join_group(address)
        device_ids = [self.device.index] if spec.use_gpu else None
        # DDP broadcasts rank 0's parameters and buffers: replicas start identical.
        self.ddp = self._collective(
            "wrapping the model", lambda: DistributedDataParallel(self.model, device_ids=device_ids)
        )
        return os.getpid()

    def _join_group(self, address: tuple[str, int]) -> None:
        host, port = address
        timeout = datetime.timedelta(seconds=self.spec.timeout_s)
        try:
            store = self._store or dist.TCPStore(
                host, port, self.world_size, is_master=False, timeout=timeout
            )
            dist.init_process_group(
                self.spec.backend,
                store=store,
                rank=self.rank,
                world_size=self.world_size,
                timeout=timeout,
            )
        except Exception as err:  # noqa: BLE001 - torch raises several unrelated types
            raise RendezvousTimeoutError(
                f"replica {self.rank} of {self.world_size} could not join the "
                f"torch.distributed group at {host}:{port} within timeout_s="
                f"{self.spec.timeout_s}: {err}. A replica died or cannot reach that "
                f"address; check the replicas' logs, or raise timeout_s on a loaded machine",
                failed_ranks=(self.rank,),
                cause=repr(err),
            ) from None

    def _collective(self, what: str, fn):
        """Run ``fn``; a failure there almost always means a peer is gone."""
        try:
            return fn()
        except TrainingFailedError:
            raise
        except RuntimeError as err:
            raise TrainingFailedError(
                f"replica {self.rank} of {self.world_size} failed while {what} "
                f"(epoch {self.epoch}, batch {self.batch_index}): {err}. Another "
                f"replica probably died or stalled for longer than timeout_s="
                f"{self.spec.timeout_s}; pass max_retries to train() to restart the "
                f"group from the last checkpoint",
                failed_ranks=(self.rank,),
                cause=repr(err),
            ) from None

    # -- training ---------------------------------------------------------

    def _epoch_batches(self):
        sampler = DistributedSampler(
            self.train_set,
            num_replicas=self.world_size,
            rank=self.rank,
            shuffle=self.spec.shuffle,
            seed=self.spec.seed,
        )
        sampler.set_epoch(self.epoch)
        size = self.spec.batch_size_per_replica
        remaining = list(sampler)[self.batch_index * size :]
        return iter(DataLoader(self.train_set, batch_size=size, sampler=remaining))

    def train(self, num_steps: int | None = None) -> StepStats:
        """Run ``num_steps`` updates, or to the end of the current epoch if None."""
        start = time.perf_counter()
        epoch_at_start = self.epoch
        steps, samples, loss_sum = 0, 0, 0.0
        self.ddp.train()
        while num_steps is None or steps < num_steps:
            if self._batches is None:
                self._batches = self._epoch_batches()
            batch = next(self._batches, None)
            if batch is None:
                if self.batch_index == 0:
                    raise ValueError(
                        "the training set gave no batch: data_creator must return a "
                        "non-empty Dataset"
                    )
                self.epoch, self.batch_index, self._batches = self.epoch + 1, 0, None
                if num_steps is None:
                    break
                continue
            loss, size = self._collective("training", lambda b=batch: self._train_batch(b))
            steps, samples, loss_sum = steps + 1, samples + size, loss_sum + loss * size
            self.batch_index += 1
        return StepStats(
            rank=self.rank,
            epoch=epoch_at_start,
            num_steps=steps,
            num_samples=samples,
            loss_sum=loss_sum,
            elapsed_s=time.perf_counter() - start,
        )

    def _train_batch(self, batch) -> tuple[float, int]:
        features, target = (t.to(self.device) for t in batch)
        output = self.ddp(features)
        loss = self.criterion(output, target)
        self.optimizer.zero_grad()
        loss.backward()  # DDP all-reduces (averages) the gradients here.
        self.optimizer.step()
        return loss.item(), len(target)

    def validate(self) -> StepStats:
        """Loss (and accuracy, for class targets) on this replica's validation shard."""
        start = time.perf_counter()
        sampler = DistributedSampler(
            self.validation_set, num_replicas=self.world_size, rank=self.rank, shuffle=False
        )
        loader = DataLoader(
            self.validation_set, batch_size=self.spec.batch_size_per_replica, sampler=sampler
        )
        samples, loss_sum, correct, has_accuracy = 0, 0.0, 0, False
        self.model.eval()
        with torch.no_grad():
            for batch in loader:
                features, target = (t.to(self.device) for t in batch)
                output = self.model(features)
                loss_sum += self.criterion(output, target).item() * len(target)
                samples += len(target)
                if output.dim() == 2 and output.shape[1] > 1 and not target.is_floating_point():
                    has_accuracy = True
                    correct += (output.argmax(dim=1) == target).sum().item()
        self.model.train()
        return StepStats(
            rank=self.rank,
            epoch=self.epoch,
            num_steps=len(loader),
            num_samples=samples,
            loss_sum=loss_sum,
            correct=correct,
            has_accuracy=has_accuracy,
            elapsed_s=time.perf_counter() - start,
        )

    # -- state --------------------------------------------------------------

    def get_state(self) -> dict:
        """Model, optimizer and data position, with tensors on the CPU."""
        return {
            "model": {k: v.detach().cpu() for k, v in self.model.state_dict().items()},
            "optimizer": _to_cpu(self.optimizer.state_dict()),
            "epoch": self.epoch,
            "batch_index": self.batch_index,
        }

    def set_state(self, state: dict) -> None:
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.epoch, self.batch_index = int(state["epoch"]), int(state["batch_index"])
        self._batches = None

    def apply(self, fn):
        """``fn(model)`` on this replica (used by ``foreach_model``)."""
        return fn(self.model)

    def pid(self) -> int:
        return os.getpid()

    def shutdown(self) -> None:
        if dist.is_initialized():
            dist.destroy_process_group()
        self._store = None


def _to_cpu(value):
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {k: _to_cpu(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_to_cpu(v) for v in value)
    return value
