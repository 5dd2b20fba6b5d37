"""Columnar experience batches.

A :class:`SampleBatch` is a dict of equally long numpy columns (one row per
environment step). A :class:`MultiAgentBatch` maps policy ids to SampleBatches
and counts environment steps separately, because one env step can produce rows
for several agents.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

DEFAULT_POLICY_ID = "default_policy"


class SampleBatch(dict):
    """A batch of experience: ``{column name: np.ndarray}``, all columns the same length."""

    CUR_OBS = "obs"
    NEXT_OBS = "new_obs"
    ACTIONS = "actions"
    REWARDS = "rewards"
    PREV_ACTIONS = "prev_actions"
    PREV_REWARDS = "prev_rewards"
    DONES = "dones"
    INFOS = "infos"
    EPS_ID = "eps_id"
    AGENT_INDEX = "agent_index"
    UNROLL_ID = "unroll_id"
    T = "t"
    ACTION_PROB = "action_prob"
    ACTION_LOGP = "action_logp"
    ACTION_DIST_INPUTS = "action_dist_inputs"
    BEHAVIOUR_LOGITS = "behaviour_logits"
    VF_PREDS = "vf_preds"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        lengths = set()
        for key, value in list(self.items()):
            if not isinstance(value, np.ndarray):
                value = _to_column(value)
                dict.__setitem__(self, key, value)
            lengths.add(len(value))
        if len(lengths) > 1:
            sizes = {k: len(v) for k, v in self.items()}
            raise ValueError(f"SampleBatch columns must have equal lengths, got {sizes}")
        self.count = lengths.pop() if lengths else 0

    @staticmethod
    def concat_samples(samples: list) -> SampleBatch | MultiAgentBatch:
        """Concatenate batches row-wise (MultiAgentBatches policy by policy)."""
        if samples and isinstance(samples[0], MultiAgentBatch):
            return MultiAgentBatch.concat_samples(samples)
        samples = [s for s in samples if s.count > 0]
        if not samples:
            return SampleBatch()
        keys = samples[0].keys()
        return SampleBatch({k: np.concatenate([s[k] for s in samples]) for k in keys})

    def concat(self, other: SampleBatch) -> SampleBatch:
        return SampleBatch.concat_samples([self, other])

    def copy(self) -> SampleBatch:
        return SampleBatch({k: v.copy() for k, v in self.items()})

    def rows(self) -> Iterator[dict]:
        for i in range(self.count):
            yield {k: v[i] for k, v in self.items()}

    def columns(self, keys: list[str]) -> list[np.ndarray]:
        return [self[k] for k in keys]

    def slice(self, start: int, end: int) -> SampleBatch:
        return SampleBatch({k: v[start:end] for k, v in self.items()})

    def shuffle(self, rng: np.random.Generator | None = None) -> SampleBatch:
        rng = rng or np.random.default_rng()
        order = rng.permutation(self.count)
        return SampleBatch({k: v[order] for k, v in self.items()})

    def split_by_episode(self) -> list[SampleBatch]:
        """One batch per contiguous run of the same ``eps_id``."""
        if self.count == 0:
            return []
        ids = self[self.EPS_ID]
        starts = [0] + [i for i in range(1, self.count) if ids[i] != ids[i - 1]] + [self.count]
        return [self.slice(a, b) for a, b in zip(starts[:-1], starts[1:])]

    def __setitem__(self, key, value):
        value = value if isinstance(value, np.ndarray) else _to_column(value)
        if self and len(value) != self.count:
            raise ValueError(f"column {key!r} has {len(value)} rows, the batch has {self.count}")
        if not self:
            self.count = len(value)
        super().__setitem__(key, value)

    def size_bytes(self) -> int:
        return sum(v.nbytes for v in self.values())

    def compress(self, bulk: bool = True, columns=frozenset(["obs", "new_obs"])) -> None:
        """Mark ``columns`` to travel compressed (LZ4 if installed, else zlib) when this
        batch is pickled, e.g. returned from a remote worker; the receiver gets plain
        arrays back. (``bulk`` is accepted for the 0.7 signature: columns are always
        compressed whole.)"""
        self._compressed_columns = frozenset(c for c in columns if c in self)

    def decompress_if_needed(self, columns=frozenset(["obs", "new_obs"])) -> SampleBatch:
        """0.7 API: columns are decompressed as they are unpickled, so nothing is left."""
        return self

    def __repr__(self):
        return f"SampleBatch({self.count}: {list(self.keys())})"

    def __reduce__(self):
        compressed = getattr(self, "_compressed_columns", None)
        if compressed:
            plain = {k: v for k, v in self.items() if k not in compressed}
            packed = {k: _pack(self[k]) for k in compressed}
            return (_unpack_batch, (plain, packed, list(self.keys())))
        return (SampleBatch, (dict(self),))


def _codec():
    try:
        import lz4.frame

        return "lz4", lz4.frame.compress
    except ImportError:
        import zlib

        return "zlib", lambda data: zlib.compress(data, 1)


def _pack(column: np.ndarray) -> tuple:
    name, compress = _codec()
    data = np.ascontiguousarray(column)
    return (name, data.dtype.str, data.shape, compress(data.tobytes()))


def _unpack(packed: tuple) -> np.ndarray:
    name, dtype, shape, data = packed
    if name == "lz4":
        import lz4.frame

        raw = lz4.frame.decompress(data)
    else:
        import zlib

        raw = zlib.decompress(data)
    return np.frombuffer(bytearray(raw), dtype=np.dtype(dtype)).reshape(shape)


def _unpack_batch(plain: dict, packed: dict, order: list) -> SampleBatch:
    columns = dict(plain)
    columns.update({k: _unpack(v) for k, v in packed.items()})
    return SampleBatch({k: columns[k] for k in order})


class MultiAgentBatch:
    """Batches of several policies; ``count`` is the number of environment steps."""

    def __init__(self, policy_batches: dict[str, SampleBatch], count: int):
        self.policy_batches = policy_batches
        self.count = count

    @staticmethod
    def wrap_as_needed(batches: dict[str, SampleBatch], count: int):
        if len(batches) == 1 and DEFAULT_POLICY_ID in batches:
            return batches[DEFAULT_POLICY_ID]
        return MultiAgentBatch(batches, count)

    @staticmethod
    def concat_samples(samples: list) -> MultiAgentBatch:
        grouped: dict[str, list[SampleBatch]] = {}
        total = 0
        for sample in samples:
            if isinstance(sample, SampleBatch):
                sample = MultiAgentBatch({DEFAULT_POLICY_ID: sample}, sample.count)
            total += sample.count
            for policy_id, batch in sample.policy_batches.items():
                grouped.setdefault(policy_id, []).append(batch)
        return MultiAgentBatch(
            {pid: SampleBatch.concat_samples(bs) for pid, bs in grouped.items()}, total
        )

    def copy(self) -> MultiAgentBatch:
        return MultiAgentBatch({k: v.copy() for k, v in self.policy_batches.items()}, self.count)

    def total(self) -> int:
        return sum(b.count for b in self.policy_batches.values())

    def __repr__(self):
        return f"MultiAgentBatch({self.policy_batches}, count={self.count})"


def _to_column(value) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    value = list(value)
    if value and isinstance(value[0], dict | str | type(None)):
        column = np.empty(len(value), dtype=object)
        column[:] = value
        return column
    return np.asarray(value)
