"""``DistributedSGD``: synchronous data-parallel SGD through the object store.

Each step every worker actor computes the gradient of each of its model
replicas, averages them locally, cuts the flat result into ``grad_shard_bytes``
shards and returns them as separate objects. Then:

- ``strategy="simple"``: the driver fetches every shard, averages, puts the
  averages back and every worker applies them (a reference implementation);
- ``strategy="ps"``: shard ``i`` of every worker goes straight from the object
  store to parameter-server actor ``i % num_workers``, which averages it; the
  workers read the averaged shards from the object store. Gradients never pass
  through the driver.

Both average with the same function in the same order, so they give
bit-identical parameters, and every replica applies the same update.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import ray
from ray.sgd.distributed.sharding import average_shards, plan_shards
from ray.sgd.distributed.worker import ParameterServer, SGDWorker

__all__ = ["DistributedSGD"]

_STRATEGIES = ("ps", "simple")
_ALL_REDUCE_ALGS = ("simple",)


class DistributedSGD:
    """Synchronous SGD over ``num_workers`` actors with ``devices_per_worker`` replicas each.

    Args:
        model_creator: ``(worker_index, device_index) -> ray.sgd.Model``.
        num_workers: number of worker actors (one CPU each, plus GPUs with ``gpu``).
        devices_per_worker: model replicas per worker (GPUs with ``gpu``).
        gpu: place replicas on GPUs (``cuda:0..devices_per_worker-1``).
        strategy: "ps" (sharded parameter servers) or "simple" (driver averages).
        grad_shard_bytes: the gradient is fused into one vector and cut into
            chunks of at most this many bytes.
        all_reduce_alg: the in-worker reduction; only "simple" (a mean).
    """

    def __init__(
        self,
        model_creator: Callable,
        num_workers: int,
        devices_per_worker: int,
        gpu: bool = True,
        strategy: str = "ps",
        grad_shard_bytes: int = 10_000_000,
        all_reduce_alg: str = "simple",
    ):
        if strategy not in _STRATEGIES:
            raise ValueError(f"strategy must be one of {_STRATEGIES}, got {strategy!r}")
        if all_reduce_alg not in _ALL_REDUCE_ALGS:
            raise ValueError(
                f"all_reduce_alg must be one of {_ALL_REDUCE_ALGS} (the PyTorch port has "
                f"no TensorFlow all-reduce variants), got {all_reduce_alg!r}"
            )
        if num_workers < 1 or devices_per_worker < 1:
            raise ValueError("num_workers and devices_per_worker must be at least 1")
        if gpu and ray.cluster_resources().get("GPU", 0) < num_workers * devices_per_worker:
            raise ValueError(
                f"gpu=True needs {num_workers * devices_per_worker} GPUs but the cluster "
                f"has {ray.cluster_resources().get('GPU', 0)}; pass gpu=False to train on CPUs"
            )
        self.strategy = strategy
        worker_class = ray.remote(num_cpus=1, num_gpus=devices_per_worker if gpu else 0)(SGDWorker)
        self.workers = [
            worker_class.remote(model_creator, i, devices_per_worker, gpu)
            for i in range(num_workers)
        ]
        size, itemsize = ray.get(self.workers[0].flat_size_and_itemsize.remote())
        self.plan = plan_shards(size, itemsize, grad_shard_bytes, num_servers=num_workers)
        server_class = ray.remote(num_cpus=0)(ParameterServer)
        self.servers = (
            [server_class.remote() for _ in range(num_workers)] if strategy == "ps" else []
        )
        # Every replica starts from worker 0's first model.
        weights = ray.put(ray.get(self.workers[0].get_flat_weights.remote()))
        ray.get([w.set_plan.remote(self.plan) for w in self.workers])
        ray.get([w.set_flat_weights.remote(weights) for w in self.workers])

    def step(self, fetch_stats: bool = False) -> dict:
        """One synchronous update of every replica; stats averaged over workers."""
        num_shards = self.plan.num_shards
        outputs = [
            w.compute_gradients.options(num_returns=num_shards + 1).remote() for w in self.workers
        ]
        if num_shards == 0:
            outputs = [[out] for out in outputs]
        shards_of_worker = [out[:num_shards] for out in outputs]
        averaged = (
            self._average_on_servers(shards_of_worker)
            if self.strategy == "ps"
            else self._average_on_driver(shards_of_worker)
        )
        ray.get([w.apply_gradients.remote(*averaged) for w in self.workers])
        if not fetch_stats:
            return {}
        stats = ray.get([out[num_shards] for out in outputs])
        return {key: float(np.mean([s[key] for s in stats])) for key in stats[0]}

    def _average_on_servers(self, shards_of_worker: list[list]) -> list:
        return [
            self.servers[self.plan.server_of(i)].average.remote(
                *[shards[i] for shards in shards_of_worker]
            )
            for i in range(self.plan.num_shards)
        ]

    def _average_on_driver(self, shards_of_worker: list[list]) -> list:
        fetched = [ray.get(shards) for shards in shards_of_worker]
        return [
            ray.put(average_shards([shards[i] for shards in fetched]))
            for i in range(self.plan.num_shards)
        ]

    def foreach_model(self, fn: Callable) -> list:
        """``fn(model)`` for every replica, worker by worker, device by device."""
        return [
            r
            for results in ray.get([w.foreach_model.remote(fn) for w in self.workers])
            for r in results
        ]

    def foreach_worker(self, fn: Callable) -> list:
        """``fn(worker)`` on every worker actor (an ``SGDWorker``)."""
        return ray.get([w.apply.remote(fn) for w in self.workers])

    def shutdown(self) -> None:
        for actor in self.workers + self.servers:
            ray.kill(actor)
        self.workers, self.servers = [], []
