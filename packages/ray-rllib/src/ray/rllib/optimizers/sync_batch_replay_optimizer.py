"""Replay of whole sample batches (recurrent policies need sequences intact; no priorities).

Each ``step()`` gathers one round of samples into a FIFO of at most
``buffer_size`` rows, then (after ``learning_starts`` steps) concatenates
uniformly drawn stored batches until ``train_batch_size`` rows and learns once.
"""

from __future__ import annotations

import collections

import numpy as np

from ray.rllib.optimizers.policy_optimizer import PolicyOptimizer
from ray.rllib.policy.sample_batch import DEFAULT_POLICY_ID, SampleBatch


class SyncBatchReplayOptimizer(PolicyOptimizer):
    def __init__(self, workers, learning_starts=1000, buffer_size=10000, train_batch_size=32,
                 seed=None):
        super().__init__(workers)
        self.replay_starts = learning_starts
        self.max_buffer_size = buffer_size
        self.train_batch_size = train_batch_size
        self.config = dict(learning_starts=learning_starts, buffer_size=buffer_size,
                           train_batch_size=train_batch_size)
        self.replay_buffer: collections.deque = collections.deque()
        self.buffer_size = 0
        self.rng = np.random.default_rng(seed)
        self.learner_stats: dict = {}

    def step(self) -> dict:
        remotes = self.workers.remote_workers()
        if remotes:
            self.workers.sync_weights()
            batches = self.workers.gather([w.sample.remote() for w in remotes])
        else:
            batches = [self.workers.local_worker().sample()]
        for batch in batches:
            self.replay_buffer.append(batch)
            self.buffer_size += batch.count
            self.num_steps_sampled += batch.count
        while self.buffer_size > self.max_buffer_size and len(self.replay_buffer) > 1:
            self.buffer_size -= self.replay_buffer.popleft().count
        if self.num_steps_sampled >= self.replay_starts:
            self._optimize()
        return self.learner_stats

    def _optimize(self) -> None:
        picked, rows = [], 0
        while rows < self.train_batch_size:
            batch = self.replay_buffer[int(self.rng.integers(len(self.replay_buffer)))]
            picked.append(batch)
            rows += batch.count
        samples = SampleBatch.concat_samples(picked)
        info = self.workers.local_worker().learn_on_batch(samples)
        per_policy = {DEFAULT_POLICY_ID: info} if "learner_stats" in info else info
        self.learner_stats = {pid: i.get("learner_stats", {}) for pid, i in per_policy.items()}
        self.num_steps_trained += samples.count

    def stats(self) -> dict:
        return dict(super().stats(), num_batches_stored=len(self.replay_buffer),
                    num_rows_stored=self.buffer_size)


__all__ = ["SyncBatchReplayOptimizer"]
