"""`TrackSession`: one trial's results logged outside `tune.run` (Ray 0.7's `track`)."""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any

from ray.tune.error import TuneError
from ray.tune.logger import UnifiedLogger
from ray.tune.result import TRAINING_ITERATION
from ray.tune.trial import DEFAULT_RESULTS_DIR, Trial


class TrackSession:
    """Logs `log(**metrics)` calls as results of one trial in `experiment_dir`.

    `trial_id` is `<trial_name>_<8 hex digits>`; `trial_config` is written to
    `params.json` (with the trial id, and the end time on `close()`).
    """

    def __init__(
        self,
        trial_name: str = "",
        experiment_dir: str | None = None,
        upload_dir: str | None = None,
        trial_config: dict | None = None,
    ):
        if upload_dir:
            raise TuneError(
                "TrackSession(upload_dir=...) is not supported: log to a local experiment_dir "
                "and sync it yourself (or run under tune.run with upload_dir)"
            )
        self.is_tune_session = False
        self.trial_id = Trial.generate_id()
        if trial_name:
            self.trial_id = f"{trial_name}_{self.trial_id}"
        self._iteration = -1
        experiment_dir = experiment_dir or os.path.join(DEFAULT_RESULTS_DIR, "default")
        self._experiment_dir = os.path.expanduser(experiment_dir)
        os.makedirs(self._experiment_dir, exist_ok=True)
        self._logdir = Trial.create_logdir(trial_name, self._experiment_dir)
        self._upload_dir = upload_dir
        self.trial_config: dict | None = dict(trial_config or {})
        self.trial_config["trial_id"] = self.trial_id
        self._logger: UnifiedLogger | None = UnifiedLogger(self.trial_config, self._logdir)

    def log(self, **metrics: Any) -> None:
        """Logs the keyword arguments as one result (`training_iteration` counts calls)."""
        if self._logger is None:
            raise TuneError("this TrackSession was closed; open a new one with track.init()")
        self._iteration += 1
        result = dict(metrics)
        result["trial_id"] = self.trial_id
        result.setdefault(TRAINING_ITERATION, self._iteration)
        self._logger.on_result(result)
        self._logger.flush()

    def close(self) -> None:
        if self._logger is None:
            return
        self.trial_config["trial_completed"] = True
        self.trial_config["end_time"] = datetime.now().isoformat()
        self._logger.update_config(self.trial_config)
        self._logger.close()
        self._logger = None

    @property
    def logdir(self) -> str:
        """The trial directory (inside the experiment directory)."""
        return self._logdir
