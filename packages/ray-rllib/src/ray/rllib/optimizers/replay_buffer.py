"""Replay buffers: uniform and prioritized (Schaul et al. 2016, arXiv:1511.05952).

Both store transitions column by column in preallocated numpy arrays (a ring
of ``capacity`` rows), take whole ``SampleBatch`` es with ``add_batch`` and
return ``SampleBatch`` es from ``sample``; the ``batch_indexes`` column says
which rows were drawn, for ``update_priorities``.

The prioritized buffer keeps ``p_i ** alpha`` in a sum tree stored as one flat
array (node ``k`` has children ``2k`` and ``2k + 1``; leaves start at
``tree_size``), so drawing ``n`` rows and updating ``n`` priorities are
``O(n log capacity)`` vectorized numpy operations. Row ``i`` is drawn with
probability ``P(i) = p_i^alpha / sum_k p_k^alpha`` and carries the importance
weight ``w_i = (N * P(i)) ** -beta / max_j w_j``.
"""

from __future__ import annotations

import numpy as np

from ray.rllib.policy.sample_batch import SampleBatch

_NON_NUMERIC = "OUS"


class ReplayBuffer:
    """A ring buffer of transitions, sampled uniformly."""

    def __init__(self, size: int, seed: int | None = None):
        if size <= 0:
            raise ValueError(f"replay buffer size must be positive, got {size}")
        self.capacity = int(size)
        self._columns: dict[str, np.ndarray] = {}
        self._next = 0
        self._size = 0
        self._rng = np.random.default_rng(seed)
        self.num_added = 0
        self.num_sampled = 0

    def __len__(self) -> int:
        return self._size

    def add_batch(self, batch: SampleBatch) -> np.ndarray:
        """Store every row of ``batch`` (numeric columns only); returns the rows' indexes."""
        if batch.count == 0:
            return np.zeros(0, dtype=np.int64)
        if not self._columns:
            self._allocate(batch)
        missing = set(self._columns) - set(batch)
        if missing:
            raise ValueError(f"batch lacks replay columns {sorted(missing)}; every batch added "
                             "to one buffer must have the same columns")
        count = min(batch.count, self.capacity)
        idx = (self._next + np.arange(count)) % self.capacity
        for key, column in self._columns.items():
            column[idx] = batch[key][-count:]
        self._next = int((self._next + count) % self.capacity)
        self._size = min(self._size + count, self.capacity)
        self.num_added += batch.count
        return idx

    def _allocate(self, batch: SampleBatch) -> None:
        for key, value in batch.items():
            if value.dtype.kind in _NON_NUMERIC:
                continue
            self._columns[key] = np.zeros((self.capacity,) + value.shape[1:], dtype=value.dtype)

    def sample(self, num_items: int) -> SampleBatch:
        """``num_items`` rows drawn uniformly with replacement."""
        self._check_not_empty()
        idx = self._rng.integers(0, self._size, size=num_items)
        return self._gather(idx)

    def _gather(self, idx: np.ndarray) -> SampleBatch:
        self.num_sampled += len(idx)
        out = SampleBatch({k: v[idx] for k, v in self._columns.items()})
        out["batch_indexes"] = idx
        return out

    def _check_not_empty(self) -> None:
        if self._size == 0:
            raise ValueError("cannot sample from an empty replay buffer: add batches first "
                             "(trainers wait for `learning_starts` steps)")

    def stats(self) -> dict:
        return {"num_entries": self._size, "num_added": self.num_added,
                "num_sampled": self.num_sampled}


class PrioritizedReplayBuffer(ReplayBuffer):
    """Proportional prioritized replay over a vectorized sum tree."""

    def __init__(self, size: int, alpha: float = 0.6, seed: int | None = None):
        super().__init__(size, seed)
        if alpha < 0:
            raise ValueError(f"prioritized_replay_alpha must be >= 0, got {alpha}")
        self.alpha = alpha
        self._tree_size = max(2, 1 << int(self.capacity - 1).bit_length())
        self._tree = np.zeros(2 * self._tree_size, dtype=np.float64)
        self._max_priority = 1.0

    def add_batch(self, batch: SampleBatch) -> np.ndarray:
        """New rows get the ``weights`` column as priority if present, else the max so far."""
        idx = super().add_batch(batch)
        if "weights" in batch and len(idx):
            priorities = np.abs(np.asarray(batch["weights"][-len(idx):], dtype=np.float64))
        else:
            priorities = np.full(len(idx), self._max_priority)
        self._set_priorities(idx, priorities)
        return idx

    def sample(self, num_items: int, beta: float = 0.4) -> SampleBatch:
        """Rows drawn in proportion to priority, with importance ``weights`` for ``beta``."""
        self._check_not_empty()
        total = self._tree[1]
        # Stratified: one draw in each of num_items equal slices of the priority mass.
        mass = (np.arange(num_items) + self._rng.random(num_items)) * (total / num_items)
        idx = self._find_prefix_sum(mass)
        leaf_p = self._tree[self._tree_size + idx]
        probs = leaf_p / total
        min_prob = self._tree[self._tree_size:self._tree_size + self._size].min() / total
        weights = (self._size * probs) ** -beta / (self._size * min_prob) ** -beta
        out = self._gather(idx)
        out["weights"] = weights.astype(np.float32)
        return out

    def update_priorities(self, idxes, priorities) -> None:
        """Set the priorities (e.g. ``|td_error| + eps``) of rows drawn earlier."""
        idxes = np.asarray(idxes, dtype=np.int64)
        priorities = np.asarray(priorities, dtype=np.float64)
        if np.any(priorities <= 0) or not np.all(np.isfinite(priorities)):
            raise ValueError("priorities must be finite and > 0: add prioritized_replay_eps "
                             "to |td_error|")
        if np.any(idxes >= self._size) or np.any(idxes < 0):
            raise IndexError(f"priority indexes out of range [0, {self._size})")
        self._set_priorities(idxes, priorities)

    def _set_priorities(self, idxes: np.ndarray, priorities: np.ndarray) -> None:
        if len(idxes) == 0:
            return
        # Later updates of the same row win, as a sequential loop would do.
        self._max_priority = max(self._max_priority, float(priorities.max()))
        nodes = idxes + self._tree_size
        self._tree[nodes] = np.maximum(priorities, 1e-12) ** self.alpha
        nodes = np.unique(nodes // 2)
        while nodes[0] >= 1:
            self._tree[nodes] = self._tree[2 * nodes] + self._tree[2 * nodes + 1]
            if nodes[0] == 1:
                break
            nodes = np.unique(nodes // 2)

    def _find_prefix_sum(self, mass: np.ndarray) -> np.ndarray:
        nodes = np.ones(len(mass), dtype=np.int64)
        mass = mass.copy()
        while nodes[0] < self._tree_size:
            left = self._tree[2 * nodes]
            go_right = mass > left
            mass -= left * go_right
            nodes = 2 * nodes + go_right
        # Rounding can land on an empty leaf past the filled rows; clamp to the last one.
        return np.minimum(nodes - self._tree_size, self._size - 1)

    def stats(self) -> dict:
        return dict(super().stats(), max_priority=self._max_priority,
                    total_priority=float(self._tree[1]))


__all__ = ["PrioritizedReplayBuffer", "ReplayBuffer"]
