"""AsyncSamplesOptimizer: the IMPALA data flow (Espeholt et al. 2018).

Remote workers sample continuously (``max_sample_requests_in_flight_per_worker``
``sample()`` calls queued on each). The driver collects finished batches as they
arrive -- mixing in replayed ones when ``replay_proportion > 0`` -- and
concatenates them into ``train_batch_size`` train batches for a *learner
thread*, which runs ``learn_on_batch`` (``num_sgd_iter`` passes) on the local
policy while sampling goes on. A worker that delivered a batch gets the
learner's latest weights (shared through the object store, one ``ray.put``
per ``broadcast_interval`` workers) before its next sample call, so its
samples lag the learner by a few updates; V-trace corrects for that.
"""

from __future__ import annotations

import collections
import logging
import queue
import threading
import time

import numpy as np

import ray
from ray.exceptions import RayError
from ray.rllib.optimizers.policy_optimizer import PolicyOptimizer
from ray.rllib.policy.sample_batch import SampleBatch
from ray.rllib.utils.timer import TimerStat

logger = logging.getLogger(__name__)


class MinibatchBuffer:
    """Ray 0.7's learner input buffer: keeps ``size`` train batches and hands them out
    round-robin, each ``num_passes`` times in all (the number of passes ramps up from 1
    over the first batches, to mix the early data), taking a new batch from ``inqueue``
    when a slot's passes are used up."""

    def __init__(self, inqueue: queue.Queue, size: int, num_passes: int):
        self.inqueue = inqueue
        self.max_ttl = max(1, num_passes)
        self.cur_max_ttl = 1
        self.buffers: list = [None] * max(1, size)
        self.ttl = [0] * max(1, size)
        self.idx = 0

    def get(self, timeout: float):
        """``(batch, released)``; ``released`` is True on the batch's last pass. Raises
        ``queue.Empty`` when a new batch is needed and none arrives within ``timeout``."""
        if self.ttl[self.idx] <= 0:
            self.buffers[self.idx] = self.inqueue.get(timeout=timeout)
            self.ttl[self.idx] = self.cur_max_ttl
            if self.cur_max_ttl < self.max_ttl:
                self.cur_max_ttl += 1
        batch = self.buffers[self.idx]
        self.ttl[self.idx] -= 1
        released = self.ttl[self.idx] <= 0
        if released:
            self.buffers[self.idx] = None
        self.idx = (self.idx + 1) % len(self.buffers)
        return batch, released


class LearnerThread(threading.Thread):
    """Takes train batches from ``inqueue`` (through a :class:`MinibatchBuffer` of
    ``minibatch_buffer_size`` slots, ``num_sgd_iter`` passes per batch) and learns on them
    with the local worker, whose policies are on the learner's device (CUDA with
    ``num_gpus > 0``)."""

    def __init__(self, local_worker, num_sgd_iter: int = 1, learner_queue_size: int = 16,
                 minibatch_buffer_size: int = 1):
        super().__init__(daemon=True, name="rllib-learner")
        self.local_worker = local_worker
        self.num_sgd_iter = max(1, num_sgd_iter)
        self.inqueue: queue.Queue = queue.Queue(maxsize=learner_queue_size)
        self.minibatch_buffer = MinibatchBuffer(self.inqueue, minibatch_buffer_size,
                                                self.num_sgd_iter)
        self.outqueue: queue.Queue = queue.Queue()
        self.weights_version = 0
        self.stats: dict = {}
        self.learn_time_s = 0.0
        self.timer = TimerStat()
        self.error: BaseException | None = None
        self._stopped = threading.Event()

    def run(self):
        try:
            while not self._stopped.is_set():
                self.step()
        except BaseException as error:  # surfaced by the optimizer's next step()
            self.error = error

    def step(self) -> None:
        try:
            batch, released = self.minibatch_buffer.get(timeout=0.2)
        except queue.Empty:
            return
        start = time.perf_counter()
        with self.timer:
            fetches = self.local_worker.learn_on_batch(batch)
        self.timer.push_units_processed(batch.count)
        self.learn_time_s += time.perf_counter() - start
        self.weights_version += 1
        self.stats = per_policy_stats(fetches)
        if released:
            self.outqueue.put(batch.count)

    def stop(self) -> None:
        self._stopped.set()
        if self.is_alive():
            self.join(timeout=10)


class AsyncSamplesOptimizer(PolicyOptimizer):
    def __init__(self, workers, train_batch_size: int = 500, sample_batch_size: int = 50,
                 num_envs_per_worker: int = 1, num_gpus: int = 0, lr: float = 0.0005,
                 replay_buffer_num_slots: int = 0, replay_proportion: float = 0.0,
                 num_data_loader_buffers: int = 1,
                 max_sample_requests_in_flight_per_worker: int = 2,
                 broadcast_interval: int = 1, num_sgd_iter: int = 1,
                 minibatch_buffer_size: int = 1, learner_queue_size: int = 16,
                 num_aggregation_workers: int = 0, _fake_gpus: bool = False, seed=None):
        super().__init__(workers)
        if num_aggregation_workers:
            raise ValueError(
                f"num_aggregation_workers={num_aggregation_workers}: aggregation actors are "
                "not implemented; the driver concatenates the workers' batches itself "
                "(set num_aggregation_workers=0)")
        if num_data_loader_buffers != 1:
            raise ValueError(
                f"num_data_loader_buffers={num_data_loader_buffers}: there is one loading "
                "path (each train batch is moved to the learner's device as it is learned "
                "on); set num_data_loader_buffers=1")
        if replay_proportion > 0 and replay_buffer_num_slots <= 0:
            raise ValueError("replay_proportion > 0 needs replay_buffer_num_slots > 0")
        self.train_batch_size = train_batch_size
        self.broadcast_interval = max(1, broadcast_interval)
        self.max_in_flight = max(1, max_sample_requests_in_flight_per_worker)
        self.replay_proportion = replay_proportion
        self.replay_buffer: collections.deque = collections.deque(
            maxlen=max(1, replay_buffer_num_slots))
        self.num_sgd_iter = num_sgd_iter
        self.rng = np.random.default_rng(seed)
        self.learner = LearnerThread(workers.local_worker(), num_sgd_iter, learner_queue_size,
                                     minibatch_buffer_size)
        self.timers["learn"] = self.learner.timer
        self._pending: list = []  # batches waiting to fill a train batch
        self._pending_count = 0
        self._in_flight: dict = {}  # sample ref -> worker
        self._weights_ref = None
        self._weights_ref_version = -1
        self._weights_ref_uses = 0
        self._worker_version: dict = {}
        self.num_weight_syncs = 0
        self.num_replayed = 0
        if workers.remote_workers():
            self.learner.start()

    # --- the loop ---------------------------------------------------------------------------

    def step(self) -> dict:
        if not self.workers.remote_workers():
            return self._step_local()
        if self.learner.error is not None:
            raise RuntimeError("the IMPALA learner thread failed") from self.learner.error
        if not self._in_flight:
            for worker in self.workers.remote_workers():
                for _ in range(self.max_in_flight):
                    self._in_flight[worker.sample.remote()] = worker
        # The first call waits for the workers to start, so no iteration reports 0 steps.
        first = self.num_steps_sampled == 0
        ready, _ = ray.wait(list(self._in_flight), num_returns=1,
                            timeout=None if first else 1.0)
        if ready:
            more, _ = ray.wait([r for r in self._in_flight if r not in ready],
                               num_returns=len(self._in_flight) - len(ready), timeout=0)
            ready = ready + more
        for ref in ready:
            worker = self._in_flight.pop(ref, None)
            if worker is None:  # dropped with a failed worker
                continue
            try:
                batch = ray.get(ref)
            except RayError as error:  # ignore_worker_failures: drop or replace it
                self._drop_worker(worker, error)
                continue
            self.num_steps_sampled += batch.count
            for train_piece in self._with_replay(batch):
                self._add_to_train_batch(train_piece)
            self._maybe_send_weights(worker)
            self._in_flight[worker.sample.remote()] = worker
        while not self.learner.outqueue.empty():
            self.num_steps_trained += self.learner.outqueue.get()
        return self.learner.stats

    def _drop_worker(self, worker, error) -> None:
        for ref in [r for r, w in self._in_flight.items() if w is worker]:
            del self._in_flight[ref]
        replacement = self.workers.handle_failure(worker, error)
        if replacement is not None:
            for _ in range(self.max_in_flight):
                self._in_flight[replacement.sample.remote()] = replacement

    def _step_local(self) -> dict:
        """No remote workers: sample and learn in the driver, one train batch at a time."""
        local = self.workers.local_worker()
        batches, count = [], 0
        with self.timers["sample"]:
            while count < self.train_batch_size:
                batch = local.sample()
                batches.append(batch)
                count += batch.count
        batch = SampleBatch.concat_samples(batches)
        self.timers["sample"].push_units_processed(batch.count)
        self.num_steps_sampled += batch.count
        fetches = {}
        with self.timers["learn"]:
            for _ in range(max(1, self.num_sgd_iter)):
                fetches = local.learn_on_batch(batch)
        self.timers["learn"].push_units_processed(batch.count)
        self.num_steps_trained += batch.count
        self.learner.stats = per_policy_stats(fetches)
        return self.learner.stats

    def _with_replay(self, batch) -> list:
        out = [batch]
        if self.replay_proportion > 0:
            if self.replay_buffer:
                for _ in range(self.rng.poisson(self.replay_proportion)):
                    out.append(self.replay_buffer[self.rng.integers(len(self.replay_buffer))])
                    self.num_replayed += out[-1].count
            self.replay_buffer.append(batch)
        return out

    def _add_to_train_batch(self, batch) -> None:
        self._pending.append(batch)
        self._pending_count += batch.count
        if self._pending_count >= self.train_batch_size:
            train_batch = SampleBatch.concat_samples(self._pending)
            self._pending, self._pending_count = [], 0
            while True:  # block (backpressure), but notice a dead learner
                try:
                    self.learner.inqueue.put(train_batch, timeout=1.0)
                    break
                except queue.Full:
                    if self.learner.error is not None or not self.learner.is_alive():
                        raise RuntimeError("the IMPALA learner thread failed") \
                            from self.learner.error

    def _maybe_send_weights(self, worker) -> None:
        version = self.learner.weights_version
        if self._worker_version.get(id(worker)) == version:
            return
        if self._weights_ref is None or (self._weights_ref_version != version
                                         and self._weights_ref_uses >= self.broadcast_interval):
            self._weights_ref = ray.put(self.workers.local_worker().get_weights())
            self._weights_ref_version, self._weights_ref_uses = version, 0
        worker.set_weights.remote(self._weights_ref)
        self._weights_ref_uses += 1
        self._worker_version[id(worker)] = self._weights_ref_version
        self.num_weight_syncs += 1

    # --- bookkeeping ------------------------------------------------------------------------

    def stats(self) -> dict:
        return dict(super().stats(), learner_queue_size=self.learner.inqueue.qsize(),
                    learn_time_s=round(self.learner.learn_time_s, 3),
                    num_weight_syncs=self.num_weight_syncs, num_steps_replayed=self.num_replayed,
                    learner=self.learner.stats)

    def stop(self) -> None:
        self.learner.stop()
        self._in_flight.clear()


def per_policy_stats(fetches: dict) -> dict:
    """``learn_on_batch`` output as ``{policy_id: learner stats}``."""
    if "learner_stats" in fetches:
        return {"default_policy": fetches["learner_stats"]}
    return {pid: f["learner_stats"] for pid, f in fetches.items() if "learner_stats" in f}


__all__ = ["AsyncSamplesOptimizer", "LearnerThread", "per_policy_stats"]
