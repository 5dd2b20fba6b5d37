"""``PolicyOptimizer``: the distributed "control plane" of a training step (Ray 0.7 API).

An optimizer owns the loop that moves samples from the rollout workers to the
learner and weights back: ``step()`` runs one round of it (a few seconds at
most) and counts ``num_steps_sampled`` / ``num_steps_trained``. Subclasses
implement ``step()``; everything else here is shared.
"""

from __future__ import annotations

import abc
import collections

from ray.rllib.evaluation.metrics import collect_episodes, summarize_episodes
from ray.rllib.utils.timer import TimerStat


class PolicyOptimizer(abc.ABC):
    """Base of the policy optimizers; ``workers`` is a :class:`WorkerSet`."""

    def __init__(self, workers):
        self.workers = workers
        self.config: dict = {}
        self.num_steps_sampled = 0
        self.num_steps_trained = 0
        self.episode_history: collections.deque = collections.deque(maxlen=100)
        # Phase timers (``sample``, ``learn``, ...), reported by the Trainer as
        # ``<name>_time_ms``.
        self.timers: dict = collections.defaultdict(TimerStat)

    @abc.abstractmethod
    def step(self) -> dict:
        """One round of sampling and learning; returns learner stats (optional)."""

    def stats(self) -> dict:
        """Counters for the result dict's ``info`` (subclasses add their own)."""
        return {"num_steps_sampled": self.num_steps_sampled,
                "num_steps_trained": self.num_steps_trained}

    def save(self) -> list:
        return [self.num_steps_trained, self.num_steps_sampled]

    def restore(self, data: list) -> None:
        self.num_steps_trained, self.num_steps_sampled = data[0], data[1]

    def stop(self) -> None:
        """Release what the optimizer started (threads, replay actors); none by default."""
        return None

    def collect_metrics(self, timeout_seconds: float = 180, min_history: int = 100,
                        selected_workers=None) -> dict:
        """Episode metrics from the workers, smoothed over at least ``min_history`` episodes."""
        remotes = self.workers.remote_workers() if selected_workers is None else selected_workers
        new = collect_episodes(self.workers.local_worker(), remotes, timeout_seconds)
        if self.episode_history.maxlen != min_history:
            self.episode_history = collections.deque(self.episode_history, maxlen=min_history)
        self.episode_history.extend(new)
        return summarize_episodes(list(self.episode_history), new)

    def foreach_worker(self, func) -> list:
        return self.workers.foreach_worker(func)

    def foreach_worker_with_index(self, func) -> list:
        return self.workers.foreach_worker_with_index(func)


__all__ = ["PolicyOptimizer"]
