"""SyncSamplesOptimizer: gather samples from all workers, learn on them centrally.

Each ``step()`` samples until ``train_batch_size`` env steps (remote workers in
parallel), runs ``num_sgd_iter`` passes of ``learn_on_batch`` in the local
worker (minibatches of ``sgd_minibatch_size`` rows when set) and broadcasts the
new weights. A2C, PG and MARWIL-style loops are this.
"""

from __future__ import annotations

import time

import numpy as np

from ray.rllib.optimizers.policy_optimizer import PolicyOptimizer
from ray.rllib.optimizers.rollout_ops import collect_samples, minibatch_sgd, policy_batches


class SyncSamplesOptimizer(PolicyOptimizer):
    def __init__(self, workers, num_sgd_iter: int = 1, train_batch_size: int = 1,
                 sgd_minibatch_size: int = 0, standardize_fields=()):
        super().__init__(workers)
        self.num_sgd_iter = num_sgd_iter
        self.train_batch_size = train_batch_size
        self.sgd_minibatch_size = sgd_minibatch_size
        self.standardize_fields = tuple(standardize_fields)
        self.rng = np.random.default_rng()
        self.learner_stats: dict = {}
        self.sample_time_s = self.learn_time_s = 0.0

    def step(self) -> dict:
        start = time.perf_counter()
        batch = collect_samples(self.workers, self.train_batch_size)
        self.sample_time_s += time.perf_counter() - start
        start = time.perf_counter()
        local = self.workers.local_worker()
        stats = {}
        for policy_id, policy_batch in policy_batches(batch).items():
            if policy_id not in local.policies_to_train:
                continue
            for field in self.standardize_fields:
                column = policy_batch[field]
                policy_batch[field] = (column - column.mean()) / max(1e-4, column.std())
            policy = local.get_policy(policy_id)
            stats[policy_id] = minibatch_sgd(policy, policy_batch, self.num_sgd_iter,
                                             self.sgd_minibatch_size, self.rng)
        self.learn_time_s += time.perf_counter() - start
        self.workers.sync_weights()
        self.num_steps_sampled += batch.count
        self.num_steps_trained += batch.count
        self.learner_stats = stats
        return stats

    def stats(self) -> dict:
        return dict(super().stats(), sample_time_s=round(self.sample_time_s, 3),
                    learn_time_s=round(self.learn_time_s, 3), learner=self.learner_stats)


__all__ = ["SyncSamplesOptimizer"]
