"""Shared pieces of training steps: gather samples, minibatch SGD, standardize."""

from __future__ import annotations

import numpy as np
import torch

from ray.rllib.policy.sample_batch import DEFAULT_POLICY_ID, MultiAgentBatch, SampleBatch


def collect_samples(workers, min_steps: int):
    """Sample from all workers (remote ones in parallel) until ``min_steps`` env steps."""
    batches, steps = [], 0
    while steps < max(min_steps, 1):
        remotes = workers.remote_workers()
        if remotes:
            new = workers.gather([w.sample.remote() for w in remotes])
        else:
            new = [workers.local_worker().sample()]
        batches.extend(new)
        steps += sum(b.count for b in new)
    return SampleBatch.concat_samples(batches)


def policy_batches(batch) -> dict:
    if isinstance(batch, MultiAgentBatch):
        return batch.policy_batches
    return {DEFAULT_POLICY_ID: batch}


def standardized(x: np.ndarray) -> np.ndarray:
    return ((x - x.mean()) / max(1e-4, float(x.std()))).astype(np.float32)


def minibatch_sgd(policy, batch: SampleBatch, num_sgd_iter: int, minibatch_size: int,
                  rng: np.random.Generator) -> dict:
    """``num_sgd_iter`` epochs of shuffled minibatches; returns the last epoch's mean stats.

    The batch is turned into tensors once; minibatches are index slices (whole
    sequences for recurrent policies).
    """
    tensors = policy.to_tensors(batch)
    recurrent = "seq_lens" in tensors
    units = len(tensors["seq_lens"]) if recurrent else batch.count
    seq_len = len(tensors["seq_mask"]) // units if recurrent else 1
    size = max(1, minibatch_size // seq_len) if minibatch_size else units
    stats_per_epoch: list[dict] = []
    for _ in range(num_sgd_iter):
        stats_per_epoch = []
        if size >= units:  # one minibatch per epoch: row order does not matter
            stats_per_epoch.append(policy.learn_on_tensors(tensors)["learner_stats"])
            continue
        order = rng.permutation(units)
        for start in range(0, units, size):
            idx = order[start : start + size]
            if len(idx) < size // 2 and start > 0:
                continue  # a tiny tail minibatch only adds gradient noise
            rows = (idx[:, None] * seq_len + np.arange(seq_len)).ravel() if recurrent else idx
            minibatch = _select(tensors, torch.as_tensor(rows), torch.as_tensor(idx), recurrent)
            stats_per_epoch.append(policy.learn_on_tensors(minibatch)["learner_stats"])
    return {k: float(np.mean([s[k] for s in stats_per_epoch])) for k in stats_per_epoch[0]}


def _select(tensors: dict, rows, seqs, recurrent: bool) -> dict:
    out = {}
    for key, value in tensors.items():
        if recurrent and (key == "seq_lens" or key.startswith("state_in_")):
            out[key] = value[seqs]
        else:
            out[key] = value[rows]
    return out
