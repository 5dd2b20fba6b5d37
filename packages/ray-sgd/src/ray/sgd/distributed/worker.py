"""A ``DistributedSGD`` worker: ``devices_per_worker`` model replicas in one actor."""

from __future__ import annotations

import numpy as np
import torch

from ray.sgd.distributed.model import Model
from ray.sgd.distributed.sharding import ShardPlan, average_shards
from ray.sgd.weights import get_flat, get_flat_grad, set_flat, set_flat_grad

__all__ = ["SGDWorker"]


class SGDWorker:
    """Computes locally averaged gradients and applies averaged ones."""

    def __init__(self, model_creator, worker_index: int, devices_per_worker: int, gpu: bool):
        torch.set_num_threads(1)
        self.worker_index = worker_index
        self.devices = [
            torch.device("cuda", i) if gpu else torch.device("cpu")
            for i in range(devices_per_worker)
        ]
        self.models: list[Model] = []
        for device_index, device in enumerate(self.devices):
            model = model_creator(worker_index, device_index)
            if not isinstance(model, Model):
                raise TypeError(
                    f"model_creator({worker_index}, {device_index}) returned "
                    f"{type(model).__name__}; it must return a ray.sgd.Model "
                    f"(a torch.nn.Module with get_loss() and get_optimizer())"
                )
            self.models.append(model.to(device))
        self.optimizers = [m.get_optimizer() for m in self.models]
        self.plan: ShardPlan | None = None
        self._last_stats: dict = {}

    def set_plan(self, plan: ShardPlan) -> None:
        self.plan = plan

    def flat_size_and_itemsize(self) -> tuple[int, int]:
        flat = get_flat(self.models[0])
        return flat.size, flat.itemsize

    def get_flat_weights(self) -> np.ndarray:
        return get_flat(self.models[0])

    def set_flat_weights(self, flat: np.ndarray) -> None:
        for model in self.models:
            set_flat(model, flat)

    def compute_gradients(self):
        """Shards of this worker's gradient (averaged over its devices), then stats."""
        grads, losses = [], []
        for model, optimizer in zip(self.models, self.optimizers):
            optimizer.zero_grad()
            loss = model.get_loss()
            loss.backward()
            grads.append(get_flat_grad(model))
            losses.append(loss.item())
        local = average_shards(grads)  # the in-worker all-reduce ("simple")
        stats = {"loss": float(np.mean(losses))}
        for model in self.models:
            for key, value in model.get_metrics().items():
                stats[key] = stats.get(key, 0.0) + float(value) / len(self.models)
        return (*self.plan.split(local), stats)

    def apply_gradients(self, *shards: np.ndarray) -> None:
        flat = self.plan.join(list(shards))
        for model, optimizer in zip(self.models, self.optimizers):
            set_flat_grad(model, flat)
            optimizer.step()

    def foreach_model(self, fn) -> list:
        return [fn(model) for model in self.models]

    def apply(self, fn):
        return fn(self)


class ParameterServer:
    """Averages the shards it owns across workers (strategy "ps")."""

    def average(self, *worker_shards: np.ndarray) -> np.ndarray:
        return average_shards(list(worker_shards))
