"""Minibatch SGD with each minibatch split across devices ("towers").

Every minibatch of ``sgd_batch_size`` rows is cut into one shard per device;
each device computes the policy loss on its shard, and the gradients are
summed, weighted by shard size, before one optimizer step. For losses that are
means over rows this is exactly the gradient of the whole minibatch, so the
result does not depend on the number of devices, only the wall-clock does.

Devices: ``num_gpus`` CUDA devices when CUDA is present. The policy's own model
lives on the first (the RolloutWorker put it there) and computes that shard in
place; every other device holds a replica, refreshed from the learner's weights
before every minibatch, whose gradients are added to the model's. Without CUDA,
``max(1, ceil(num_gpus))`` logical devices on the CPU take turns on the one model
(Ray 0.7's ``_fake_gpus``), which tests the splitting on any machine.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch

from ray.rllib.optimizers.policy_optimizer import PolicyOptimizer
from ray.rllib.optimizers.rollout_ops import (
    collect_samples,
    mean_stats,
    policy_batches,
    standardized,
)


class LocalMultiGPUOptimizer(PolicyOptimizer):
    def __init__(self, workers, sgd_batch_size=128, num_sgd_iter=10, sample_batch_size=200,
                 num_envs_per_worker=1, train_batch_size=1024, num_gpus=0,
                 standardize_fields=(), straggler_mitigation=False, seed=None):
        super().__init__(workers)
        if sgd_batch_size > train_batch_size:
            raise ValueError(f"sgd_batch_size ({sgd_batch_size}) must be <= train_batch_size "
                             f"({train_batch_size})")
        self.sgd_batch_size = sgd_batch_size
        self.num_sgd_iter = num_sgd_iter
        self.train_batch_size = train_batch_size
        self.standardize_fields = list(standardize_fields)
        self.devices = _devices(num_gpus)
        self.config = dict(sgd_batch_size=sgd_batch_size, num_sgd_iter=num_sgd_iter,
                           train_batch_size=train_batch_size, devices=list(map(str,
                                                                              self.devices)))
        self.rng = np.random.default_rng(seed)
        self._replicas: dict = {}
        self.learner_stats: dict = {}

    def step(self) -> dict:
        if self.workers.remote_workers():
            self.workers.sync_weights()
        batch = collect_samples(self.workers, self.train_batch_size)
        self.num_steps_sampled += batch.count
        local = self.workers.local_worker()
        for policy_id, policy_batch in policy_batches(batch).items():
            if policy_id not in local.policies_to_train:
                continue
            for field in self.standardize_fields:
                policy_batch[field] = standardized(policy_batch[field])
            self.learner_stats[policy_id] = self.sgd_on_batch(
                policy_id, local.get_policy(policy_id), policy_batch)
            self.num_steps_trained += policy_batch.count
        return self.learner_stats

    def sgd_on_batch(self, policy_id, policy, batch) -> dict:
        """``num_sgd_iter`` epochs of shuffled minibatches of ``batch``, each split across
        the devices; returns the mean learner stats."""
        if getattr(policy, "_loss", None) is None:
            raise ValueError(f"{type(policy).__name__} has no single loss function to split "
                             "across devices; use LocalMultiGPUOptimizer with policies built "
                             "by build_torch_policy (PG, A2C, PPO, DQN)")
        tensors = policy.to_tensors(batch)
        if "seq_lens" in tensors:
            raise ValueError("LocalMultiGPUOptimizer splits rows, not sequences: recurrent "
                             "policies need SyncSamplesOptimizer or SyncBatchReplayOptimizer")
        stats = []
        for _ in range(self.num_sgd_iter):
            order = torch.as_tensor(self.rng.permutation(batch.count))
            for start in range(0, batch.count, self.sgd_batch_size):
                rows = order[start:start + self.sgd_batch_size]
                stats.append(self._minibatch(policy_id, policy,
                                             {k: v[rows] for k, v in tensors.items()}))
        return mean_stats(stats)

    def _minibatch(self, policy_id, policy, tensors: dict) -> dict:
        count = len(next(iter(tensors.values())))
        shards = np.array_split(np.arange(count), min(len(self.devices), count))
        with policy.lock:
            policy._optimizer.zero_grad(set_to_none=True)
            for device, rows in zip(self.devices, shards):
                shard = {k: v[torch.as_tensor(rows)] for k, v in tensors.items()}
                self._accumulate(policy_id, policy, device, shard, len(rows) / count)
            grad_info = policy.extra_grad_process()
            policy._optimizer.step()
            stats = dict(policy.extra_grad_info(tensors))
        stats.update(grad_info)
        return stats

    def _accumulate(self, policy_id, policy, device, shard: dict, weight: float) -> None:
        main_device = getattr(policy, "device", torch.device("cpu"))
        if device == main_device or device.type == "cpu":
            shard = {k: v.to(main_device) for k, v in shard.items()}
            (policy.total_loss(shard) * weight).backward()
            return
        replica = self._replica(policy_id, policy, device)
        main_model = policy.model
        policy.model = replica
        try:
            loss = policy.total_loss({k: v.to(device) for k, v in shard.items()}) * weight
            grads = torch.autograd.grad(loss, list(replica.parameters()), allow_unused=True)
        finally:
            policy.model = main_model
        for param, grad in zip(main_model.parameters(), grads):
            if grad is not None:
                grad = grad.to(param.device)
                param.grad = grad if param.grad is None else param.grad + grad

    def _replica(self, policy_id, policy, device):
        key = (policy_id, str(device))
        if key not in self._replicas:
            self._replicas[key] = copy.deepcopy(policy.model).to(device)
        replica = self._replicas[key]
        replica.load_state_dict(policy.model.state_dict())
        return replica

    def stats(self) -> dict:
        return dict(super().stats(), num_devices=len(self.devices))


def _devices(num_gpus: float) -> list:
    if num_gpus and torch.cuda.is_available():
        wanted = int(math.ceil(num_gpus))
        if wanted > torch.cuda.device_count():
            raise ValueError(f"num_gpus={num_gpus} but only {torch.cuda.device_count()} CUDA "
                             "devices are visible: lower num_gpus")
        return [torch.device("cuda", i) for i in range(wanted)]
    return [torch.device("cpu")] * max(1, int(math.ceil(num_gpus or 0)))


__all__ = ["LocalMultiGPUOptimizer"]
