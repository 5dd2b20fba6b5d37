"""Shared pieces of training steps: gather samples, minibatch SGD, standardize."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

from ray.rllib.policy.sample_batch import DEFAULT_POLICY_ID, MultiAgentBatch, SampleBatch


def collect_samples(workers, min_steps: int, timer=None):
    """Sample from all workers (remote ones in parallel) until ``min_steps`` env steps;
    ``timer`` (a TimerStat) times it."""
    if timer is not None:
        with timer:
            batch = collect_samples(workers, min_steps)
        timer.push_units_processed(batch.count)
        return batch
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
                  rng: np.random.Generator, shuffle: bool = True) -> dict:
    """``num_sgd_iter`` epochs of minibatches, shuffled each epoch unless ``shuffle`` is
    False (then in sample order); returns the last epoch's mean stats.

    The batch is turned into tensors once. Each epoch gathers every column the loss
    reads once, in that epoch's shuffled row order (whole sequences for recurrent
    policies), and its minibatches are contiguous slices of those (views, no copies):
    the same rows in the same order as indexing each minibatch, with one gather per
    column per epoch instead of one per minibatch. Stats are computed only in the last
    epoch, the one reported (``TorchPolicy.sgd_step`` runs the earlier ones).
    """
    tensors = policy.to_tensors(batch)
    recurrent = "seq_lens" in tensors
    units = len(tensors["seq_lens"]) if recurrent else batch.count
    seq_len = len(tensors["seq_mask"]) // units if recurrent else 1
    size = max(1, minibatch_size // seq_len) if minibatch_size else units
    quiet_step = _quiet_step(policy)
    stats_per_epoch: list[dict] = []
    for epoch in range(num_sgd_iter):
        last = epoch == num_sgd_iter - 1
        stats_per_epoch = []
        if size >= units:  # one minibatch per epoch: row order does not matter
            if last or quiet_step is None:
                stats_per_epoch.append(policy.learn_on_tensors(tensors)["learner_stats"])
            else:
                quiet_step(tensors)
            continue
        order = _EpochOrder(tensors, rng.permutation(units) if shuffle else None, seq_len,
                            recurrent)
        for start in range(0, units, size):
            stop = min(start + size, units)
            if stop - start < size // 2 and start > 0:
                continue  # a tiny tail minibatch only adds gradient noise
            minibatch = _Minibatch(order, start, stop)
            if last or quiet_step is None:
                stats_per_epoch.append(policy.learn_on_tensors(minibatch)["learner_stats"])
            else:
                quiet_step(minibatch)
    return mean_stats(stats_per_epoch)


def _quiet_step(policy):
    """``policy.sgd_step`` (an SGD step without stats) where the policy's learning step
    is TorchPolicy's own; None where a subclass changed ``learn_on_tensors`` (it may do
    more than step, so every minibatch goes through it)."""
    from ray.rllib.policy.torch_policy import TorchPolicy

    if isinstance(policy, TorchPolicy) and \
            type(policy).learn_on_tensors is TorchPolicy.learn_on_tensors:
        return policy.sgd_step
    return None


def mean_stats(stats: list[dict]) -> dict:
    """Key-wise mean of learner-stat dicts (nested dicts, e.g. a model's custom stats,
    averaged key by key)."""
    out = {}
    for key, first in stats[-1].items():
        values = [s[key] for s in stats if key in s]
        if isinstance(first, dict):
            out[key] = mean_stats(values)
        else:
            out[key] = float(np.mean(values))
    return out


class _EpochOrder:
    """A batch's tensors in one epoch's row order: each column is gathered (one
    ``index_select``) the first time a minibatch of the epoch reads it.

    ``order`` permutes units (rows, or whole sequences of ``seq_len`` rows); None keeps
    sample order (no copies). Per-sequence columns (``seq_lens``, ``state_in_*``) follow
    the unit order, the others the row order.
    """

    def __init__(self, tensors: dict, order, seq_len: int, recurrent: bool):
        self.tensors = tensors
        self.seq_len = seq_len
        self.recurrent = recurrent
        self._units = None if order is None else torch.as_tensor(order)
        self._rows = self._units
        if order is not None and recurrent:
            self._rows = torch.as_tensor((order[:, None] * seq_len + np.arange(seq_len)).ravel())
        self._columns: dict = {}

    def per_unit(self, key: str) -> bool:
        return self.recurrent and (key == "seq_lens" or key.startswith("state_in_"))

    def column(self, key: str):
        column = self._columns.get(key)
        if column is None:
            source = self.tensors[key]
            index = self._units if self.per_unit(key) else self._rows
            column = source if index is None else source.index_select(0, index)
            self._columns[key] = column
        return column


class _Minibatch(Mapping):
    """Units ``[start, stop)`` of an epoch's order: a read-only mapping of column name to
    tensor (contiguous slices of the epoch's gathered columns)."""

    __slots__ = ("_order", "_start", "_stop")

    def __init__(self, order: _EpochOrder, start: int, stop: int):
        self._order, self._start, self._stop = order, start, stop

    def __getitem__(self, key):
        order = self._order
        column = order.column(key)
        if order.per_unit(key):
            return column[self._start:self._stop]
        return column[self._start * order.seq_len:self._stop * order.seq_len]

    def __contains__(self, key):
        return key in self._order.tensors

    def __iter__(self):
        return iter(self._order.tensors)

    def __len__(self):
        return len(self._order.tensors)
