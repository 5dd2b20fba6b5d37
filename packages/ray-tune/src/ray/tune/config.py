"""The Ray 2.x configuration objects: `TuneConfig`, `RunConfig` and its parts.

Plain frozen dataclasses; `Tuner.fit()` turns them into `tune.run` arguments
(tuner.py lists the mapping). Unknown fields are rejected by the dataclass
constructor (`TypeError: unexpected keyword argument`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ray.tune.error import TuneError


def _check_mode(mode: str | None, where: str) -> None:
    if mode not in (None, "max", "min"):
        raise TuneError(f"{where}(mode={mode!r}): mode must be 'max' or 'min'")


@dataclass(frozen=True)
class TuneConfig:
    """How to search: metric/mode, searcher, scheduler, number of samples, concurrency."""

    metric: str | None = None
    mode: str | None = None
    search_alg: Any = None
    scheduler: Any = None
    num_samples: int = 1
    max_concurrent_trials: int | None = None
    time_budget_s: float | None = None
    reuse_actors: bool | None = None
    trial_name_creator: Callable | None = None

    def __post_init__(self):
        _check_mode(self.mode, "TuneConfig")
        if self.num_samples < 1:
            raise TuneError(f"TuneConfig(num_samples={self.num_samples}): must be >= 1")
        if self.max_concurrent_trials is not None and self.max_concurrent_trials < 1:
            raise TuneError(
                f"TuneConfig(max_concurrent_trials={self.max_concurrent_trials}): must be >= 1"
            )


@dataclass(frozen=True)
class CheckpointConfig:
    """Which checkpoints to keep and when class trainables save (`checkpoint_frequency`)."""

    num_to_keep: int | None = None
    checkpoint_score_attribute: str | None = None
    checkpoint_score_order: str = "max"
    checkpoint_frequency: int = 0
    checkpoint_at_end: bool | None = None

    def __post_init__(self):
        if self.num_to_keep is not None and self.num_to_keep < 1:
            raise TuneError(f"CheckpointConfig(num_to_keep={self.num_to_keep}): must be >= 1")
        if self.checkpoint_score_order not in ("max", "min"):
            raise TuneError("CheckpointConfig(checkpoint_score_order=...) must be 'max' or 'min'")

    def score_attr(self) -> str | None:
        """The 0.7 spelling: `min-<attr>` for minimised attributes."""
        attr = self.checkpoint_score_attribute
        if attr is None:
            return None
        return f"min-{attr}" if self.checkpoint_score_order == "min" else attr


@dataclass(frozen=True)
class FailureConfig:
    """`max_failures`: restarts per trial (from its latest checkpoint); -1 means forever."""

    max_failures: int = 0
    fail_fast: bool = False


@dataclass(frozen=True)
class ScalingConfig:
    """Resources for one trial: `num_workers` x `resources_per_worker` (+ `trainer_resources`)."""

    num_workers: int = 1
    use_gpu: bool = False
    resources_per_worker: dict | None = None
    trainer_resources: dict | None = None
    placement_strategy: str = "PACK"  # accepted; one actor per trial has nothing to place

    def as_resources(self) -> dict:
        """The equivalent `resources_per_trial` dict (Tune runs one actor per trial)."""
        per_worker = {k.upper(): v for k, v in (self.resources_per_worker or {}).items()}
        per_worker.setdefault("CPU", 1)
        if self.use_gpu:
            per_worker.setdefault("GPU", 1)
        total = {k: v * self.num_workers for k, v in per_worker.items()}
        for key, value in (self.trainer_resources or {}).items():
            total[key.upper()] = total.get(key.upper(), 0) + value
        return {"cpu": total.pop("CPU", 0), "gpu": total.pop("GPU", 0), **total}


@dataclass(frozen=True)
class RunConfig:
    """Where and how long: experiment `name`, `storage_path`, `stop`, checkpoint/failure configs."""

    name: str | None = None
    storage_path: str | None = None
    stop: dict | Callable | None = None
    callbacks: list | None = None  # tune.Callback instances
    checkpoint_config: CheckpointConfig = field(default_factory=CheckpointConfig)
    failure_config: FailureConfig = field(default_factory=FailureConfig)
    verbose: int | None = None
    local_dir: str | None = None  # the Ray 2.0-2.6 name of storage_path

    def __post_init__(self):
        if self.checkpoint_config is None:
            object.__setattr__(self, "checkpoint_config", CheckpointConfig())
        if self.failure_config is None:
            object.__setattr__(self, "failure_config", FailureConfig())
        if self.storage_path and "://" in self.storage_path:
            raise TuneError(
                f"RunConfig(storage_path={self.storage_path!r}): only local paths (or a shared "
                "mount) are supported; use upload_dir with tune.run() to sync to the cloud"
            )

    def experiment_root(self) -> str:
        from ray.tune.trial import DEFAULT_RESULTS_DIR

        root = self.storage_path or self.local_dir or DEFAULT_RESULTS_DIR
        return os.path.abspath(os.path.expanduser(root))
