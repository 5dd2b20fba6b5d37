"""Synchronous replay (DQN, DDPG, SAC): sample, store, replay a batch, learn, repeat.

Each ``step()`` broadcasts the learner's weights, gathers one round of samples
from every worker into per-policy replay buffers, and, once ``learning_starts``
steps were sampled, trains on ``train_batch_size`` replayed rows per policy.
With ``prioritized_replay`` the policy's ``td_error`` (returned by
``learn_on_batch``) becomes the rows' new priority ``|td_error| + eps``, and
the importance exponent beta anneals linearly from ``prioritized_replay_beta``
to ``final_prioritized_replay_beta`` over ``beta_annealing_fraction *
schedule_max_timesteps`` steps.
"""

from __future__ import annotations

from ray.rllib.optimizers.policy_optimizer import PolicyOptimizer
from ray.rllib.optimizers.replay_buffer import PrioritizedReplayBuffer, ReplayBuffer
from ray.rllib.policy.sample_batch import DEFAULT_POLICY_ID, MultiAgentBatch, SampleBatch
from ray.rllib.utils.schedules import PiecewiseSchedule


class SyncReplayOptimizer(PolicyOptimizer):
    def __init__(self, workers, learning_starts=1000, buffer_size=10000, prioritized_replay=True,
                 prioritized_replay_alpha=0.6, prioritized_replay_beta=0.4,
                 schedule_max_timesteps=100000, beta_annealing_fraction=0.2,
                 final_prioritized_replay_beta=0.4, prioritized_replay_eps=1e-6,
                 train_batch_size=32, sample_batch_size=4, seed=None):
        super().__init__(workers)
        self.replay_starts = learning_starts
        self.prioritized_replay = prioritized_replay
        self.prioritized_replay_eps = prioritized_replay_eps
        self.train_batch_size = train_batch_size
        anneal_steps = max(1, int(beta_annealing_fraction * schedule_max_timesteps))
        self.beta_schedule = PiecewiseSchedule(
            [[0, prioritized_replay_beta], [anneal_steps, final_prioritized_replay_beta]])
        self.config = dict(learning_starts=learning_starts, buffer_size=buffer_size,
                           prioritized_replay=prioritized_replay,
                           train_batch_size=train_batch_size, sample_batch_size=sample_batch_size)

        def new_buffer():
            if prioritized_replay:
                return PrioritizedReplayBuffer(buffer_size, prioritized_replay_alpha, seed)
            return ReplayBuffer(buffer_size, seed)

        self._new_buffer = new_buffer
        self.replay_buffers: dict = {}
        self.learner_stats: dict = {}

    def step(self) -> dict:
        batch = self._sample()
        with self.timers["replay"]:
            for policy_id, policy_batch in _policy_batches(batch).items():
                if policy_id not in self.replay_buffers:
                    self.replay_buffers[policy_id] = self._new_buffer()
                self.replay_buffers[policy_id].add_batch(policy_batch)
        self.num_steps_sampled += batch.count
        if self.num_steps_sampled >= self.replay_starts:
            self._optimize()
        return self.learner_stats

    def _sample(self):
        remotes = self.workers.remote_workers()
        if not remotes:
            with self.timers["sample"]:
                batch = self.workers.local_worker().sample()
            self.timers["sample"].push_units_processed(batch.count)
            return batch
        with self.timers["synch_weights"]:
            self.workers.sync_weights()
        with self.timers["sample"]:
            batch = SampleBatch.concat_samples(
                self.workers.gather([w.sample.remote() for w in remotes]))
        self.timers["sample"].push_units_processed(batch.count)
        return batch

    def replay(self):
        """One training batch: ``train_batch_size`` replayed rows of each policy."""
        beta = self.beta_schedule.value(self.num_steps_sampled)
        samples = {}
        for policy_id, buffer in self.replay_buffers.items():
            if self.prioritized_replay:
                samples[policy_id] = buffer.sample(self.train_batch_size, beta=beta)
            else:
                samples[policy_id] = buffer.sample(self.train_batch_size)
        return MultiAgentBatch.wrap_as_needed(samples, self.train_batch_size)

    def _optimize(self) -> None:
        with self.timers["replay"]:
            samples = self.replay()
        with self.timers["learn"]:
            info = self.workers.local_worker().learn_on_batch(samples)
        self.timers["learn"].push_units_processed(samples.count)
        per_policy = {DEFAULT_POLICY_ID: info} if "learner_stats" in info else info
        for policy_id, policy_info in per_policy.items():
            self.learner_stats[policy_id] = policy_info.get("learner_stats", {})
            if self.prioritized_replay and "td_error" in policy_info:
                rows = _policy_batches(samples)[policy_id]
                self.replay_buffers[policy_id].update_priorities(
                    rows["batch_indexes"], abs(policy_info["td_error"]) +
                    self.prioritized_replay_eps)
        self.num_steps_trained += samples.count

    def stats(self) -> dict:
        return dict(super().stats(), replay_buffers={
            pid: b.stats() for pid, b in self.replay_buffers.items()})


def _policy_batches(batch) -> dict:
    if isinstance(batch, MultiAgentBatch):
        return batch.policy_batches
    return {DEFAULT_POLICY_ID: batch}


__all__ = ["SyncReplayOptimizer"]
