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
    storage_filesystem: Any = None  # a pyarrow.fs.FileSystem (or fsspec) for storage_path
    progress_reporter: Any = None  # a tune.ProgressReporter (default: CLIReporter)
    sync_config: SyncConfig | None = None

    def __post_init__(self):
        if self.checkpoint_config is None:
            object.__setattr__(self, "checkpoint_config", CheckpointConfig())
        if self.failure_config is None:
            object.__setattr__(self, "failure_config", FailureConfig())
        if self.sync_config is None:
            object.__setattr__(self, "sync_config", SyncConfig())
        if self.storage_path is not None:
            object.__setattr__(self, "storage_path", os.fspath(self.storage_path))

    def experiment_root(self) -> str:
        """The local directory experiments go into (for a remote storage_path: the staging
        directory, TUNE_RESULT_DIR or ~/ray_results)."""
        from ray.tune.storage import is_uri

        root = self.storage_path or self.local_dir
        if root is None or is_uri(root) or self.storage_filesystem is not None:
            root = os.environ.get("TUNE_RESULT_DIR") or "~/ray_results"
        return os.path.abspath(os.path.expanduser(root))


@dataclass(frozen=True)
class SyncConfig:
    """How often the experiment is uploaded to a remote `storage_path`.

    `sync_period`: at most one upload per this many seconds while the experiment state
    changes (and always at the end). `sync_on_checkpoint`: also upload as soon as a trial
    registers a new checkpoint (so a restore loses no checkpointed work). Uploads are
    incremental (changed files only; the experiment state last).
    """

    sync_period: float = 300.0
    sync_artifacts: bool = False
    sync_on_checkpoint: bool = True

    def __post_init__(self):
        if self.sync_period < 0:
            raise TuneError(f"SyncConfig(sync_period={self.sync_period}): must be >= 0 seconds")
        if self.sync_artifacts:
            raise TuneError(
                "SyncConfig(sync_artifacts=True) is not supported: trials write their files into "
                "the trial directory, which is uploaded with the experiment"
            )
