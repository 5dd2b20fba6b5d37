"""``ShuffledInput``: batches from another reader, drawn at random from a buffer of ``n``."""

from __future__ import annotations

import random

from ray.rllib.offline.json_io import InputReader


class ShuffledInput(InputReader):
    def __init__(self, child: InputReader, n: int = 0, seed: int | None = None):
        self.child = child
        self.n = n
        self.buffer: list = []
        self._rng = random.Random(seed)

    def next(self):
        if self.n <= 1:
            return self.child.next()
        while len(self.buffer) < self.n:
            self.buffer.append(self.child.next())
        index = self._rng.randrange(len(self.buffer))
        batch, self.buffer[index] = self.buffer[index], self.child.next()
        return batch
