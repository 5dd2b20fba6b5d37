"""Ape-X's event loop (Horgan et al. 2018, arXiv:1803.00933): distributed prioritized replay.

Data flow, with no step waiting on another::

    rollout workers --sample--> replay actors (prioritized shards)
    replay actors --replay batch--> learner thread (local policy) --td_error--> replay actors
    learner weights --every max_weight_sync_delay steps--> each rollout worker

The driver loop (``step()``) only moves object refs: a worker's batch goes from
its process through the object store to a random replay shard without being
fetched by the driver (``sample_with_count`` returns the row count as a second
object). Each shard keeps ``REPLAY_TASKS_PER_SHARD`` replay requests in flight;
replayed batches queue for the learner thread, whose ``td_error`` outputs go
back to the shard as new priorities. With ``batch_replay`` the shards store and
replay whole sample batches uniformly (for recurrent policies) instead.
"""

from __future__ import annotations

import logging
import queue
import random
import threading
import time

import numpy as np

import ray
from ray.rllib.optimizers.policy_optimizer import PolicyOptimizer
from ray.rllib.optimizers.replay_buffer import PrioritizedReplayBuffer
from ray.rllib.policy.sample_batch import DEFAULT_POLICY_ID, MultiAgentBatch, SampleBatch

logger = logging.getLogger(__name__)

REPLAY_TASKS_PER_SHARD = 2
SAMPLE_TASKS_PER_WORKER = 2
LEARNER_QUEUE_SIZE = 16


class ReplayShard:
    """One shard of the replay memory (run as a Ray actor), a buffer per policy."""

    def __init__(self, num_shards, learning_starts, buffer_size, train_batch_size,
                 prioritized_replay_alpha, prioritized_replay_beta, prioritized_replay_eps,
                 batch_replay=False, seed=None):
        self.replay_starts = learning_starts // num_shards
        self.buffer_size = max(1, buffer_size // num_shards)
        self.train_batch_size = train_batch_size
        self.alpha, self.beta, self.eps = (prioritized_replay_alpha, prioritized_replay_beta,
                                           prioritized_replay_eps)
        self.batch_replay = batch_replay
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.buffers: dict = {}
        self.batches: dict = {}  # batch_replay: policy id -> list of whole batches
        self.num_added = 0

    def add_batch(self, batch) -> None:
        policy_batches = batch.policy_batches if isinstance(batch, MultiAgentBatch) \
            else {DEFAULT_POLICY_ID: batch}
        for policy_id, policy_batch in policy_batches.items():
            if self.batch_replay:
                stored = self.batches.setdefault(policy_id, [])
                stored.append(policy_batch)
                if sum(b.count for b in stored) > self.buffer_size:
                    stored.pop(0)
            else:
                if policy_id not in self.buffers:
                    self.buffers[policy_id] = PrioritizedReplayBuffer(
                        self.buffer_size, self.alpha, self.seed)
                self.buffers[policy_id].add_batch(policy_batch)
        self.num_added += batch.count

    def replay(self):
        """A training batch, or None until this shard has ``learning_starts / shards`` rows."""
        if self.num_added < self.replay_starts:
            return None
        samples = {}
        if self.batch_replay:
            for policy_id, stored in self.batches.items():
                picked, rows = [], 0
                while rows < self.train_batch_size:
                    batch = stored[int(self.rng.integers(len(stored)))]
                    picked.append(batch)
                    rows += batch.count
                samples[policy_id] = SampleBatch.concat_samples(picked)
        else:
            for policy_id, buffer in self.buffers.items():
                samples[policy_id] = buffer.sample(self.train_batch_size, beta=self.beta)
        return MultiAgentBatch.wrap_as_needed(samples, self.train_batch_size)

    def update_priorities(self, prio_dict: dict) -> None:
        for policy_id, (batch_indexes, td_errors) in prio_dict.items():
            self.buffers[policy_id].update_priorities(batch_indexes,
                                                      np.abs(td_errors) + self.eps)

    def stats(self) -> dict:
        if self.batch_replay:
            return {"num_added": self.num_added,
                    "num_batches": {p: len(b) for p, b in self.batches.items()}}
        return {"num_added": self.num_added,
                **{pid: b.stats() for pid, b in self.buffers.items()}}


class LearnerThread(threading.Thread):
    """Trains the local policy on replayed batches as they arrive."""

    def __init__(self, local_worker):
        super().__init__(daemon=True, name="apex-learner")
        self.local_worker = local_worker
        self.inqueue: queue.Queue = queue.Queue(maxsize=LEARNER_QUEUE_SIZE)
        self.outqueue: queue.Queue = queue.Queue()
        self.stopped = False
        self.stats: dict = {}
        self.num_steps_trained = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        while not self.stopped:
            try:
                shard, batch = self.inqueue.get(timeout=0.1)
            except queue.Empty:
                continue
            try:
                info = self.local_worker.learn_on_batch(batch)
            except BaseException as error:  # noqa: BLE001 - reported by the driver loop
                self.error = error
                return
            per_policy = {DEFAULT_POLICY_ID: info} if "learner_stats" in info else info
            priorities = {}
            batches = batch.policy_batches if isinstance(batch, MultiAgentBatch) \
                else {DEFAULT_POLICY_ID: batch}
            for policy_id, policy_info in per_policy.items():
                self.stats[policy_id] = policy_info.get("learner_stats", {})
                if "td_error" in policy_info and "batch_indexes" in batches[policy_id]:
                    priorities[policy_id] = (batches[policy_id]["batch_indexes"],
                                             policy_info["td_error"])
            self.num_steps_trained += batch.count
            self.outqueue.put((shard, priorities, batch.count))


class AsyncReplayOptimizer(PolicyOptimizer):
    def __init__(self, workers, learning_starts=1000, buffer_size=10000,
                 prioritized_replay=True, prioritized_replay_alpha=0.6,
                 prioritized_replay_beta=0.4, prioritized_replay_eps=1e-6,
                 train_batch_size=512, sample_batch_size=50, num_replay_buffer_shards=1,
                 max_weight_sync_delay=400, debug=False, batch_replay=False, seed=None):
        super().__init__(workers)
        if not workers.remote_workers():
            raise ValueError("Ape-X (AsyncReplayOptimizer) samples on remote workers: set "
                             "num_workers >= 1")
        if not prioritized_replay and not batch_replay:
            logger.info("AsyncReplayOptimizer always prioritizes; prioritized_replay=False "
                        "is taken as alpha=0 (uniform replay)")
            prioritized_replay_alpha = 0.0
        self.config = dict(learning_starts=learning_starts, buffer_size=buffer_size,
                           train_batch_size=train_batch_size,
                           num_replay_buffer_shards=num_replay_buffer_shards,
                           max_weight_sync_delay=max_weight_sync_delay, batch_replay=batch_replay)
        self.max_weight_sync_delay = max_weight_sync_delay
        self.debug = debug
        shard_cls = ray.remote(num_cpus=0)(ReplayShard)
        self.replay_actors = [
            shard_cls.remote(num_replay_buffer_shards, learning_starts, buffer_size,
                             train_batch_size, prioritized_replay_alpha, prioritized_replay_beta,
                             prioritized_replay_eps, batch_replay,
                             None if seed is None else seed + i)
            for i in range(num_replay_buffer_shards)
        ]
        self.learner = LearnerThread(workers.local_worker())
        self.learner.start()
        self._rng = random.Random(seed)
        self._weights_ref = None
        self._weights_version = -1
        self._steps_since_update = {w: 0 for w in workers.remote_workers()}
        self._sample_tasks: dict = {}  # count ref -> (worker, batch ref)
        self._replay_tasks: dict = {}  # batch ref -> shard
        self.num_weight_syncs = 0
        self.num_samples_dropped = 0
        self._timers = {"sample_processing_s": 0.0, "replay_processing_s": 0.0,
                        "update_priorities_s": 0.0}
        for worker in workers.remote_workers():
            self._set_weights(worker)
            for _ in range(SAMPLE_TASKS_PER_WORKER):
                self._launch_sample(worker)
        for shard in self.replay_actors:
            for _ in range(REPLAY_TASKS_PER_SHARD):
                self._replay_tasks[shard.replay.remote()] = shard

    def _launch_sample(self, worker) -> None:
        batch_ref, count_ref = worker.sample_with_count.options(num_returns=2).remote()
        self._sample_tasks[count_ref] = (worker, batch_ref)

    def _set_weights(self, worker) -> None:
        version = self.learner.num_steps_trained
        if self._weights_version != version:
            self._weights_ref = ray.put(self.workers.local_worker().get_weights())
            self._weights_version = version
        worker.set_weights.remote(self._weights_ref)
        self._steps_since_update[worker] = 0
        self.num_weight_syncs += 1

    def step(self) -> dict:
        if self.learner.error is not None:
            raise RuntimeError("the Ape-X learner thread failed") from self.learner.error
        start = time.perf_counter()
        self._process_samples()
        self._timers["sample_processing_s"] += time.perf_counter() - start
        start = time.perf_counter()
        self._process_replays()
        self._timers["replay_processing_s"] += time.perf_counter() - start
        start = time.perf_counter()
        self._process_priorities()
        self._timers["update_priorities_s"] += time.perf_counter() - start
        self.num_steps_trained = self.learner.num_steps_trained
        return dict(self.learner.stats)

    def _process_samples(self) -> None:
        ready, _ = ray.wait(list(self._sample_tasks), num_returns=len(self._sample_tasks),
                            timeout=0.01)
        for count_ref in ready:
            worker, batch_ref = self._sample_tasks.pop(count_ref)
            count = ray.get(count_ref)
            self._rng.choice(self.replay_actors).add_batch.remote(batch_ref)
            self.num_steps_sampled += count
            self._steps_since_update[worker] += count
            if self._steps_since_update[worker] >= self.max_weight_sync_delay:
                self._set_weights(worker)
            self._launch_sample(worker)

    def _process_replays(self) -> None:
        ready, _ = ray.wait(list(self._replay_tasks), num_returns=len(self._replay_tasks),
                            timeout=0)
        for batch_ref in ready:
            shard = self._replay_tasks[batch_ref]
            if self.learner.inqueue.full():
                continue  # the learner is behind: keep the replay for the next step
            del self._replay_tasks[batch_ref]
            batch = ray.get(batch_ref)
            if batch is not None:
                self.learner.inqueue.put((shard, batch))
            self._replay_tasks[shard.replay.remote()] = shard

    def _process_priorities(self) -> None:
        while True:
            try:
                shard, priorities, _count = self.learner.outqueue.get_nowait()
            except queue.Empty:
                return
            if priorities:
                shard.update_priorities.remote(priorities)

    def stats(self) -> dict:
        out = dict(super().stats(), num_weight_syncs=self.num_weight_syncs,
                   learner_queue_size=self.learner.inqueue.qsize(),
                   **{k: round(v, 3) for k, v in self._timers.items()})
        if self.debug:
            out["replay_shard_0"] = ray.get(self.replay_actors[0].stats.remote())
        return out

    def stop(self) -> None:
        self.learner.stopped = True
        self.learner.join(timeout=10)
        for shard in self.replay_actors:
            try:
                ray.kill(shard)
            except Exception:  # noqa: BLE001 - a dead actor is already gone
                pass
        self.replay_actors = []


__all__ = ["AsyncReplayOptimizer", "LearnerThread", "ReplayShard"]
