"""How a flat gradient vector is cut into shards and spread over servers.

``grad_shard_bytes`` fuses all gradient tensors into one flat vector and cuts
it into contiguous chunks of at most that many bytes (at least one element);
shard ``i`` is averaged by parameter server ``i % num_servers``. Pure functions.
"""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["ShardPlan", "average_shards", "plan_shards"]


@dataclasses.dataclass(frozen=True)
class ShardPlan:
    """Half-open ``[start, stop)`` element ranges, in order, covering the vector."""

    bounds: tuple[tuple[int, int], ...]
    num_servers: int

    @property
    def num_shards(self) -> int:
        return len(self.bounds)

    def server_of(self, shard: int) -> int:
        return shard % self.num_servers

    def shards_of(self, server: int) -> list[int]:
        return [s for s in range(self.num_shards) if self.server_of(s) == server]

    def split(self, flat: np.ndarray) -> list[np.ndarray]:
        return [flat[start:stop] for start, stop in self.bounds]

    def join(self, shards: list[np.ndarray]) -> np.ndarray:
        if len(shards) != self.num_shards:
            raise ValueError(f"expected {self.num_shards} shards, got {len(shards)}")
        if not shards:
            return np.zeros(0, dtype=np.float32)
        return np.concatenate(shards)


def plan_shards(
    num_elements: int, itemsize: int, grad_shard_bytes: int, num_servers: int = 1
) -> ShardPlan:
    """Cut ``num_elements`` items of ``itemsize`` bytes into shards of at most
    ``grad_shard_bytes`` bytes (a shard holds at least one element)."""
    if grad_shard_bytes <= 0:
        raise ValueError(f"grad_shard_bytes must be positive, got {grad_shard_bytes}")
    if num_servers < 1:
        raise ValueError(f"num_servers must be at least 1, got {num_servers}")
    per_shard = max(1, grad_shard_bytes // itemsize)
    bounds = tuple(
        (start, min(start + per_shard, num_elements)) for start in range(0, num_elements, per_shard)
    )
    return ShardPlan(bounds=bounds, num_servers=num_servers)


def average_shards(shards: list[np.ndarray]) -> np.ndarray:
    """The element-wise mean of equally shaped gradients, summed in list order.

    Both strategies ("simple" on the driver, "ps" on the servers) call this, so
    they produce bit-identical averages.
    """
    if not shards:
        raise ValueError("average_shards needs at least one gradient")
    total = np.array(shards[0], dtype=shards[0].dtype, copy=True)
    for shard in shards[1:]:
        total += shard
    total /= len(shards)
    return total
