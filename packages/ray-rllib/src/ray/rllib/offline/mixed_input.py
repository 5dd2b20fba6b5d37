"""``MixedInput``: ``input={"sampler": 0.4, "/tmp/out": 0.6}`` -- pick a source per batch."""

from __future__ import annotations

import numpy as np

from ray.rllib.offline.json_io import InputReader, JsonReader


class MixedInput(InputReader):
    def __init__(self, dist: dict, ioctx, seed: int | None = None):
        if not dist:
            raise ValueError("input dict is empty: map sources to probabilities, "
                             "e.g. {'sampler': 0.5, '/tmp/out': 0.5}")
        probs = [float(p) for p in dist.values()]
        if any(p < 0 for p in probs) or abs(sum(probs) - 1.0) > 1e-6:
            raise ValueError(f"input probabilities must be >= 0 and sum to 1, got {dist}")
        self.choices = []
        for source in dist:
            if source == "sampler":
                self.choices.append(ioctx.default_sampler_input())
            else:
                self.choices.append(JsonReader(source, ioctx))
        self.p = probs
        self._rng = np.random.default_rng(seed)

    def next(self):
        return self.choices[self._rng.choice(len(self.choices), p=self.p)].next()
