"""`ResultGrid` and `Result`: what `Tuner.fit()` returns (Ray 2.x).

Built from the finished Trials and what the driver logged in each trial directory
(`result.json`, `progress.csv`), so a grid read back from disk after `Tuner.restore`
holds the same data as the one `fit()` returned.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ray.tune.checkpoint import Checkpoint
from ray.tune.error import TuneError
from ray.tune.function_runner import CHECKPOINT_DIR_NAME
from ray.tune.trial import Checkpoint as TrialCheckpoint
from ray.tune.trial import Trial

_SCOPES = ("last", "avg", "last-5-avg", "last-10-avg", "all")


@dataclass
class Result:
    """One trial's outcome: its last `metrics`, `config`, latest `checkpoint`, `path`, `error`."""

    metrics: dict
    config: dict
    path: str
    checkpoint: Checkpoint | None = None
    error: Exception | None = None
    best_checkpoints: list[tuple[Checkpoint, dict]] = field(default_factory=list)
    filesystem: Any = None

    _local_path: str | None = None  # where the driver wrote it (remote storage: the staging copy)

    @property
    def metrics_dataframe(self):
        """Every reported result of the trial (its `progress.csv`), or None if it reported none."""
        import pandas as pd

        csv = os.path.join(self._local_path or self.path, "progress.csv")
        if not os.path.exists(csv) or os.path.getsize(csv) == 0:
            return None
        return pd.read_csv(csv)

    @classmethod
    def from_trial(cls, trial: Trial, storage: Any = None) -> Result:
        result = cls._from_local_trial(trial)
        if storage is None or not storage.is_remote:
            return result
        # Remote storage: paths and checkpoints name the uploaded copies.
        def remote(checkpoint):
            if checkpoint is None:
                return None
            return Checkpoint(storage.remote_path_of(checkpoint.path), filesystem=storage.fs)

        result._local_path = result.path
        result.path = storage.remote_path_of(result.path)
        result.filesystem = storage.fs
        result.checkpoint = remote(result.checkpoint)
        result.best_checkpoints = [(remote(c), m) for c, m in result.best_checkpoints]
        return result

    @classmethod
    def _from_local_trial(cls, trial: Trial) -> Result:
        history = _read_results(trial.logdir)
        reported = [
            (Checkpoint(os.path.join(trial.logdir, r[CHECKPOINT_DIR_NAME])), r)
            for r in history
            if r.get(CHECKPOINT_DIR_NAME)
            and os.path.isdir(os.path.join(trial.logdir, r[CHECKPOINT_DIR_NAME]))
        ]
        checkpoint = reported[-1][0] if reported else _saved_checkpoint(trial)
        error = None
        if trial.status == Trial.ERROR:
            error = TuneError(f"trial {trial} ({trial.trial_id}) failed:\n{trial.error_msg or ''}")
        return cls(
            metrics=dict(trial.last_result),
            config=dict(trial.config),
            path=trial.logdir,
            checkpoint=checkpoint,
            error=error,
            best_checkpoints=reported,
        )

    def __repr__(self) -> str:
        shown = {k: v for k, v in self.metrics.items() if k != "config"}
        return (
            f"Result(metrics={shown!r}, path={self.path!r}, checkpoint={self.checkpoint!r}, "
            f"error={self.error!r})"
        )


class ResultGrid:
    """The results of every trial of an experiment (indexable, iterable, `len()`)."""

    def __init__(self, results: list[Result], experiment_path: str, metric=None, mode=None):
        self._results = list(results)
        self.experiment_path = experiment_path
        self.filesystem = None
        self._metric = metric
        self._mode = mode

    @classmethod
    def from_trials(cls, trials: list[Trial], experiment_path: str, metric=None, mode=None,
                    storage: Any = None):
        grid = cls([Result.from_trial(t, storage) for t in trials], experiment_path, metric, mode)
        if storage is not None and storage.is_remote:
            grid.filesystem = storage.fs
        return grid

    def __len__(self) -> int:
        return len(self._results)

    def __getitem__(self, index: int) -> Result:
        return self._results[index]

    def __iter__(self) -> Iterator[Result]:
        return iter(self._results)

    @property
    def errors(self) -> list[Exception]:
        return [r.error for r in self._results if r.error is not None]

    @property
    def num_errors(self) -> int:
        return len(self.errors)

    @property
    def num_terminated(self) -> int:
        return sum(1 for r in self._results if r.error is None)

    def get_best_result(
        self,
        metric: str | None = None,
        mode: str | None = None,
        scope: str = "last",
        filter_nan_and_inf: bool = True,
    ) -> Result:
        """The best trial by `metric` (default: TuneConfig's) under `scope` (last, avg, all, ...)."""
        metric = metric or self._metric
        mode = mode or self._mode
        if metric is None or mode is None:
            raise TuneError(
                "get_best_result() needs a metric and a mode: pass them here or in "
                "TuneConfig(metric=..., mode=...)"
            )
        if mode not in ("max", "min"):
            raise TuneError(f"get_best_result(mode={mode!r}): mode must be 'max' or 'min'")
        if scope not in _SCOPES:
            raise TuneError(f"get_best_result(scope={scope!r}): scope must be one of {_SCOPES}")
        sign = 1.0 if mode == "max" else -1.0
        scored = []
        for result in self._results:
            value = _score(result, metric, mode, scope)
            if value is None or (filter_nan_and_inf and not math.isfinite(value)):
                continue
            scored.append((sign * value, result))
        if not scored:
            raise TuneError(
                f"no trial reported a finite {metric!r} (trials: {len(self._results)}, "
                f"errors: {self.num_errors}); check the metric name or results.errors"
            )
        return max(scored, key=lambda pair: pair[0])[1]

    def get_dataframe(self, filter_metric: str | None = None, filter_mode: str | None = None):
        """One row per trial: its last result (or its best by `filter_metric`), config as `config/...`."""
        import pandas as pd

        if (filter_metric is None) != (filter_mode is None):
            raise TuneError("get_dataframe() needs both filter_metric and filter_mode, or neither")
        rows = []
        for result in self._results:
            row = {k: v for k, v in result.metrics.items() if k != "config"}
            if filter_metric is not None:
                frame = result.metrics_dataframe
                if frame is not None and filter_metric in frame:
                    best = frame[filter_metric].idxmax() if filter_mode == "max" else (
                        frame[filter_metric].idxmin()
                    )
                    row = {k: v for k, v in frame.loc[best].to_dict().items()
                           if not k.startswith("config/")}
            for key, value in _flatten(result.config).items():
                row[f"config/{key}"] = value
            row["logdir"] = result.path
            rows.append(row)
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        return f"ResultGrid<{len(self)} results, {self.num_errors} errors, {self.experiment_path}>"


def _score(result: Result, metric: str, mode: str, scope: str) -> float | None:
    if scope == "last":
        value = result.metrics.get(metric)
        return float(value) if isinstance(value, (int, float)) else None
    frame = result.metrics_dataframe
    if frame is None or metric not in frame:
        return None
    series = frame[metric].dropna()
    if series.empty:
        return None
    if scope == "all":
        return float(series.max() if mode == "max" else series.min())
    if scope == "avg":
        return float(series.mean())
    return float(series.tail(int(scope.split("-")[1])).mean())


def _read_results(logdir: str | None) -> list[dict]:
    path = os.path.join(logdir or "", "result.json")
    if not logdir or not os.path.exists(path):
        return []
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    continue  # a line cut short by an interrupted run
    return out


def _saved_checkpoint(trial: Trial) -> Checkpoint | None:
    """A class trainable's latest checkpoint on disk (`checkpoint_frequency`, `at_end`)."""
    saved = trial.checkpoint
    if saved is None or saved.storage != TrialCheckpoint.DISK or not isinstance(saved.value, str):
        return None
    directory = saved.value if os.path.isdir(saved.value) else os.path.dirname(saved.value)
    return Checkpoint(directory) if os.path.isdir(directory) else None


def _flatten(config: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in config.items():
        if isinstance(value, dict):
            out.update(_flatten(value, f"{prefix}{key}/"))
        else:
            out[f"{prefix}{key}"] = value
    return out
