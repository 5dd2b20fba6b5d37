"""Observation filters: running statistics that workers update and the driver merges.

``MeanStdFilter`` keeps Welford statistics (n, mean, M2). Each worker also keeps
a *buffer* of the statistics gathered since the last sync; the driver merges
every worker's buffer into its own filter and broadcasts the result back
(:class:`ray.rllib.utils.filter_manager.FilterManager`).
"""

from __future__ import annotations

import numpy as np


class RunningStat:
    def __init__(self, shape=()):
        self.n = 0
        self.mean = np.zeros(shape, dtype=np.float64)
        self.m2 = np.zeros(shape, dtype=np.float64)

    def push(self, x: np.ndarray) -> None:
        x = np.asarray(x, dtype=np.float64)
        self.n += 1
        delta = x - self.mean
        self.mean = self.mean + delta / self.n
        self.m2 = self.m2 + delta * (x - self.mean)

    def update(self, other: RunningStat) -> None:
        """Chan et al.'s parallel merge of two sets of statistics."""
        if other.n == 0:
            return
        n = self.n + other.n
        delta = other.mean - self.mean
        self.mean = self.mean + delta * other.n / n
        self.m2 = self.m2 + other.m2 + delta * delta * self.n * other.n / n
        self.n = n

    def copy(self) -> RunningStat:
        out = RunningStat(self.mean.shape)
        out.n, out.mean, out.m2 = self.n, self.mean.copy(), self.m2.copy()
        return out

    @property
    def var(self) -> np.ndarray:
        return self.m2 / (self.n - 1) if self.n > 1 else np.square(self.mean)

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(self.var)


class Filter:
    def __call__(self, x, update: bool = True):
        raise NotImplementedError

    def apply_changes(self, other: Filter, with_buffer: bool = False) -> None:
        pass

    def copy(self) -> Filter:
        return self

    def sync(self, other: Filter) -> None:
        pass

    def clear_buffer(self) -> None:
        pass

    def as_serializable(self) -> Filter:
        return self.copy()


class NoFilter(Filter):
    is_concurrent = True

    def __call__(self, x, update: bool = True):
        return np.asarray(x)


class MeanStdFilter(Filter):
    """``(x - mean) / (std + 1e-8)``, clipped to ``[-clip, clip]``."""

    def __init__(self, shape, demean: bool = True, destd: bool = True, clip: float = 10.0):
        self.shape = shape
        self.demean, self.destd, self.clip = demean, destd, clip
        self.rs = RunningStat(shape)
        self.buffer = RunningStat(shape)

    def __call__(self, x, update: bool = True):
        x = np.asarray(x, dtype=np.float64)
        if update:
            batched = x.ndim == len(self.shape) + 1
            for row in x if batched else [x]:
                self.rs.push(row)
                self.buffer.push(row)
        if self.demean:
            x = x - self.rs.mean
        if self.destd:
            x = x / (self.rs.std + 1e-8)
        if self.clip:
            x = np.clip(x, -self.clip, self.clip)
        return x.astype(np.float32)

    def apply_changes(self, other: MeanStdFilter, with_buffer: bool = False) -> None:
        self.rs.update(other.buffer)
        if with_buffer:
            self.buffer = other.buffer.copy()

    def copy(self) -> MeanStdFilter:
        out = MeanStdFilter(self.shape, self.demean, self.destd, self.clip)
        out.rs, out.buffer = self.rs.copy(), self.buffer.copy()
        return out

    def sync(self, other: MeanStdFilter) -> None:
        self.rs = other.rs.copy()
        self.buffer = other.buffer.copy()

    def clear_buffer(self) -> None:
        self.buffer = RunningStat(self.shape)


def get_filter(name: str, shape) -> Filter:
    if name == "MeanStdFilter":
        return MeanStdFilter(shape, clip=None)
    if name == "ConcurrentMeanStdFilter":
        return MeanStdFilter(shape, clip=None)
    if name == "NoFilter":
        return NoFilter()
    raise ValueError(
        f"unknown observation_filter {name!r}: use 'NoFilter' or 'MeanStdFilter'"
    )
