"""Read an experiment directory back: one row per trial, the best config, per-trial curves."""

from __future__ import annotations

import glob
import json
import os
from typing import Any

from ray.tune import result as R
from ray.tune.error import TuneError
from ray.tune.logger import flatten_dict


class Analysis:
    """Analysis of every trial directory (containing `result.json`) under `experiment_dir`."""

    def __init__(self, experiment_dir: str):
        experiment_dir = os.path.abspath(os.path.expanduser(experiment_dir))
        if not os.path.isdir(experiment_dir):
            raise TuneError(f"{experiment_dir} is not a directory")
        self._experiment_dir = experiment_dir
        self._configs: dict[str, dict] = {}
        self._trial_dataframes: dict[str, Any] = {}
        self.fetch_trial_dataframes()

    def _trial_logdirs(self) -> list[str]:
        pattern = os.path.join(self._experiment_dir, "**", R.EXPR_RESULT_FILE)
        return sorted(os.path.dirname(p) for p in glob.glob(pattern, recursive=True))

    def fetch_trial_dataframes(self) -> dict[str, Any]:
        import pandas as pd

        frames = {}
        for logdir in self._trial_logdirs():
            rows = _read_results(os.path.join(logdir, R.EXPR_RESULT_FILE))
            frames[logdir] = pd.DataFrame([flatten_dict(r) for r in rows])
        self._trial_dataframes = frames
        return frames

    @property
    def trial_dataframes(self) -> dict[str, Any]:
        """{logdir: DataFrame of every result of that trial}."""
        return self._trial_dataframes

    def get_all_configs(self, prefix: bool = False) -> dict[str, dict]:
        configs = {}
        for logdir in self._trial_dataframes:
            path = os.path.join(logdir, R.EXPR_PARAM_FILE)
            if os.path.exists(path):
                with open(path) as f:
                    config = json.load(f)
                configs[logdir] = {"config:" + k: v for k, v in config.items()} if prefix else config
        self._configs = configs
        return configs

    def dataframe(self, metric: str | None = None, mode: str | None = None, refresh: bool = False):
        """One row per trial: its last result (or its best by `metric`), flattened, plus logdir."""
        import pandas as pd

        if refresh:
            self.fetch_trial_dataframes()
        rows = []
        for logdir, frame in self._trial_dataframes.items():
            if frame.empty:
                continue
            if metric is not None and metric in frame:
                index = frame[metric].idxmax() if (mode or "max") == "max" else frame[metric].idxmin()
                row = frame.loc[index].to_dict()
            else:
                row = frame.iloc[-1].to_dict()
            row["logdir"] = logdir
            rows.append(row)
        return pd.DataFrame(rows)

    def _best_row(self, metric: str, mode: str):
        if mode not in ("max", "min"):
            raise TuneError(f"mode must be 'max' or 'min', got {mode!r}")
        frame = self.dataframe()  # trials are compared on their last results
        if frame.empty or metric not in frame:
            return None
        frame = frame.dropna(subset=[metric])
        if frame.empty:
            return None
        index = frame[metric].idxmax() if mode == "max" else frame[metric].idxmin()
        return frame.loc[index]

    def get_best_logdir(self, metric: str, mode: str = "max") -> str | None:
        row = self._best_row(metric, mode)
        return None if row is None else row["logdir"]

    def get_best_config(self, metric: str, mode: str = "max") -> dict | None:
        logdir = self.get_best_logdir(metric, mode)
        if logdir is None:
            return None
        return self.get_all_configs().get(logdir)

    def get_best_info(self, metric: str, mode: str = "max", flatten: bool = True) -> dict | None:
        row = self._best_row(metric, mode)
        if row is None:
            return None
        info = row.to_dict()
        return info if flatten else _unflatten(info)

    def get_best_trainable(self, metric: str, trainable_cls: type, mode: str = "max"):
        """Builds `trainable_cls` with the best config and restores its latest checkpoint."""
        logdir = self.get_best_logdir(metric, mode)
        if logdir is None:
            return None
        trainable = trainable_cls(config=self.get_all_configs()[logdir])
        checkpoint = _latest_checkpoint(logdir)
        if checkpoint is not None:
            trainable.restore(checkpoint)
        return trainable


class ExperimentAnalysis(Analysis):
    """Analysis of one experiment through its `experiment_state-*.json` file."""

    def __init__(self, experiment_path: str, trials: list | None = None):
        from ray.tune import experiment_state as ES

        experiment_path = os.path.abspath(os.path.expanduser(experiment_path))
        self._experiment_state = None
        if ES.find_state_file(experiment_path) is not None:
            self._experiment_state = ES.load_state(experiment_path)
        elif trials is None:
            raise TuneError(
                f"no experiment state file in {experiment_path}: is it a Tune experiment "
                "directory (local_dir/name)?"
            )
        self.trials = trials
        super().__init__(experiment_path)

    def _trial_logdirs(self) -> list[str]:
        if self.trials is not None:
            return [t.logdir for t in self.trials if t.logdir and os.path.isdir(t.logdir)]
        if self._experiment_state is not None:
            return [
                t["logdir"]
                for t in self._experiment_state["checkpoints"]
                if t.get("logdir") and os.path.isdir(t["logdir"])
            ]
        return super()._trial_logdirs()

    @property
    def _checkpoints(self) -> list[dict]:
        """The trials as saved in the experiment state (Ray 0.7's attribute name)."""
        return self.trial_records()

    def stats(self) -> dict:
        return (self._experiment_state or {}).get("stats", {})

    def runner_data(self) -> dict:
        return (self._experiment_state or {}).get("runner_data", {})

    def trial_records(self) -> list[dict]:
        """The trials as saved in the experiment state (status, config, last result, ...)."""
        return list((self._experiment_state or {}).get("checkpoints", []))


def _read_results(path: str) -> list[dict]:
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    break  # a partially written last line (the driver was killed)
    return rows


def _unflatten(flat: dict) -> dict:
    out: dict = {}
    for key, value in flat.items():
        node = out
        parts = str(key).split("/")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return out


def _latest_checkpoint(logdir: str) -> str | None:
    dirs = glob.glob(os.path.join(logdir, "checkpoint_*"))
    if not dirs:
        return None
    latest = max(dirs, key=lambda d: int(d.rsplit("_", 1)[-1]) if d.rsplit("_", 1)[-1].isdigit() else -1)
    metas = glob.glob(os.path.join(latest, "*.tune_metadata"))
    return metas[0][: -len(".tune_metadata")] if metas else None
