from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class SamplerOptions:
    """How a sampler collects one batch.

    ``unroll_length`` is steps per env per batch (``truncate_episodes``) or the
    minimum number of rows (``complete_episodes``).
    """

    unroll_length: int = 200
    batch_mode: str = "truncate_episodes"
    horizon: int | None = None
    soft_horizon: bool = False
    clip_rewards: bool = False
    clip_actions: bool = True
    callbacks: dict = field(default_factory=dict)
    rng: random.Random = field(default_factory=random.Random)
