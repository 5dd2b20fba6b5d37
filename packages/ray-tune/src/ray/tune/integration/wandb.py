"""`WandbLoggerCallback`: one Weights & Biases run per trial.

    from ray.air.integrations.wandb import WandbLoggerCallback   # or ray.tune.integration.wandb
    tune.RunConfig(callbacks=[WandbLoggerCallback(project="p", mode="offline")])

Each trial is a run (`id` = the trial id, `name` = the trial name, `group` = the
experiment unless given, `dir` = the trial directory, `config` = the trial's config when
`log_config=True`, else only the searched parameters). Every result is logged (minus
`excludes` and Tune's bookkeeping fields) with `training_iteration` as its step; the run
finishes with exit code 1 when the trial failed. Extra keyword arguments go to
`wandb.init` (`mode="offline"`, `entity`, `tags`, ...). The API key comes from
`api_key`, `api_key_file` or `WANDB_API_KEY` (not needed offline).
`upload_checkpoints=True` logs each checkpoint directory as an artifact.
"""

from __future__ import annotations

import numbers
import os
from typing import Any

from ray.tune.error import TuneError
from ray.tune.logger import LoggerCallback, flatten_dict
from ray.tune.result import TRAINING_ITERATION

_EXCLUDED = {"done", "trial_id", "experiment_id", "date", "timestamp", "pid", "hostname",
             "node_ip", "config", "checkpoint_dir_name", "should_checkpoint"}


class WandbLoggerCallback(LoggerCallback):
    """See the module docstring."""

    def __init__(
        self,
        project: str | None = None,
        group: str | None = None,
        api_key_file: str | None = None,
        api_key: str | None = None,
        excludes: list[str] | None = None,
        log_config: bool = False,
        upload_checkpoints: bool = False,
        save_checkpoints: bool = False,
        **kwargs: Any,
    ):
        try:
            import wandb  # noqa: F401
        except ImportError as exc:
            raise TuneError("WandbLoggerCallback needs wandb: pip install wandb") from exc
        if api_key_file and api_key:
            raise TuneError("WandbLoggerCallback: give api_key or api_key_file, not both")
        self.project = project
        self.group = group
        self.api_key_file = api_key_file
        self.api_key = api_key
        self.excludes = list(excludes or [])
        self.log_config = log_config
        self.upload_checkpoints = upload_checkpoints or save_checkpoints
        self.kwargs = kwargs
        self._runs: dict[str, Any] = {}
        self._experiment_name: str | None = None

    def setup(self, *args: Any, **kwargs: Any) -> None:
        key = self.api_key
        if self.api_key_file:
            with open(os.path.expanduser(self.api_key_file)) as f:
                key = f.readline().strip()
        if key:
            os.environ["WANDB_API_KEY"] = key
        mode = self.kwargs.get("mode") or os.environ.get("WANDB_MODE")
        if mode not in ("offline", "disabled") and not os.environ.get("WANDB_API_KEY"):
            raise TuneError(
                "WandbLoggerCallback needs an API key: pass api_key= or api_key_file=, set "
                "WANDB_API_KEY, or log without one with mode=\"offline\""
            )

    def log_trial_start(self, trial) -> None:
        import wandb

        if trial.trial_id in self._runs:
            return
        experiment = os.path.basename(os.path.dirname(trial.logdir.rstrip(os.sep)))
        config = trial.config if self.log_config else {
            k[len("config/"):] if k.startswith("config/") else k: v
            for k, v in (trial.evaluated_params or {}).items()}
        settings = self.kwargs.get("settings") or wandb.Settings(silent=True)
        init = {"project": self.project or experiment, "group": self.group or experiment,
                "name": str(trial), "id": trial.trial_id, "dir": trial.logdir,
                "config": dict(config), "reinit": "create_new", "resume": "allow",
                **self.kwargs, "settings": settings}
        os.makedirs(trial.logdir, exist_ok=True)
        self._runs[trial.trial_id] = wandb.init(**init)

    def log_trial_result(self, iteration: int, trial, result: dict) -> None:
        if trial.trial_id not in self._runs:
            self.log_trial_start(trial)
        data = {}
        for key, value in flatten_dict(result).items():
            if key.split("/")[0] in _EXCLUDED or key in self.excludes or key.startswith("config/"):
                continue
            if isinstance(value, numbers.Number) or isinstance(value, str):
                data[key] = value
        step = result.get(TRAINING_ITERATION)
        self._runs[trial.trial_id].log(data, step=int(step) if step is not None else None)

    def on_checkpoint(self, iteration, trials, trial, checkpoint, **info) -> None:
        if not self.upload_checkpoints or trial.trial_id not in self._runs:
            return
        import wandb

        artifact = wandb.Artifact(name=f"checkpoint_{trial.trial_id}", type="model")
        with checkpoint.as_directory() as path:
            artifact.add_dir(path)
            self._runs[trial.trial_id].log_artifact(artifact)

    def log_trial_end(self, trial, failed: bool = False) -> None:
        run = self._runs.pop(trial.trial_id, None)
        if run is not None:
            run.finish(exit_code=1 if failed else 0)

    def on_experiment_end(self, trials, **info) -> None:
        super().on_experiment_end(trials, **info)
        for trial_id in list(self._runs):
            self._runs.pop(trial_id).finish()
        import wandb

        # Stop W&B's background service process this callback's runs started (Ray runs
        # them in logging actors that exit; here they live in the driver).
        wandb.teardown()
