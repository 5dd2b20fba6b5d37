"""When a replica group fails: retry from the checkpoint, or give up (pure)."""

from __future__ import annotations

import dataclasses

__all__ = ["GiveUp", "RetryFromCheckpoint", "RetryBudget"]


@dataclasses.dataclass(frozen=True)
class RetryFromCheckpoint:
    attempt: int  # 1 for the first retry


@dataclasses.dataclass(frozen=True)
class GiveUp:
    failures: int


@dataclasses.dataclass
class RetryBudget:
    """Counts failures of one ``train()`` call against ``max_retries``."""

    max_retries: int
    failures: int = 0

    def __post_init__(self):
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be non-negative, got {self.max_retries}")

    def failed(self) -> RetryFromCheckpoint | GiveUp:
        self.failures += 1
        if self.failures > self.max_retries:
            return GiveUp(failures=self.failures)
        return RetryFromCheckpoint(attempt=self.failures)
