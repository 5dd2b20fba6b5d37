"""AsyncGradientsOptimizer: apply gradients as remote workers finish them (A3C).

Every remote worker keeps one ``compute_gradients(sample())`` call in flight.
Each ``step()`` applies ``grads_per_step`` gradients in arrival order to the
local policy and sends the worker that produced one the new weights before
its next call, so a gradient is at most a few updates stale.
"""

from __future__ import annotations

import ray
from ray.rllib.optimizers.policy_optimizer import PolicyOptimizer


class AsyncGradientsOptimizer(PolicyOptimizer):
    def __init__(self, workers, grads_per_step: int = 100):
        super().__init__(workers)
        if not workers.remote_workers():
            raise ValueError("AsyncGradientsOptimizer needs remote workers: set num_workers >= 1")
        self.grads_per_step = grads_per_step
        self.learner_stats: dict = {}
        self._in_flight: dict = {}

    def _launch(self, worker) -> None:
        self._in_flight[worker.compute_gradients.remote(worker.sample.remote())] = worker

    def step(self) -> dict:
        local = self.workers.local_worker()
        if not self._in_flight:
            weights = ray.put(local.get_weights())
            for worker in self.workers.remote_workers():
                worker.set_weights.remote(weights)
                self._launch(worker)
        info = {}
        for _ in range(self.grads_per_step):
            [ready], _ = ray.wait(list(self._in_flight))
            worker = self._in_flight.pop(ready)
            grads, info = ray.get(ready)
            local.apply_gradients(grads)
            count = _batch_count(info)
            self.num_steps_sampled += count
            self.num_steps_trained += count
            worker.set_weights.remote(local.get_weights())
            self._launch(worker)
        self.learner_stats = _learner_stats(info)
        return self.learner_stats

    def stop(self) -> None:
        self._in_flight.clear()


def _batch_count(info: dict) -> int:
    if "batch_count" in info:
        return info["batch_count"]
    return max((v.get("batch_count", 0) for v in info.values() if isinstance(v, dict)),
               default=0)


def _learner_stats(info: dict) -> dict:
    if "learner_stats" in info:
        return {"default_policy": info["learner_stats"]}
    return {pid: v["learner_stats"] for pid, v in info.items()
            if isinstance(v, dict) and "learner_stats" in v}


__all__ = ["AsyncGradientsOptimizer"]
