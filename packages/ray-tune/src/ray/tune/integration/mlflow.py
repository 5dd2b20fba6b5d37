"""`MLflowLoggerCallback`: one MLflow run per trial (params, metrics per step, artifacts).

    from ray.air.integrations.mlflow import MLflowLoggerCallback   # or ray.tune.integration.mlflow
    tune.RunConfig(callbacks=[MLflowLoggerCallback(tracking_uri="file:///tmp/mlruns",
                                                   experiment_name="exp", save_artifact=True)])

Runs are created through `mlflow.tracking.MlflowClient` (no global MLflow state): the
run is named after the trial and tagged `trial_name`/`trial_id` plus `tags`; the
flattened config is logged as params at the start (or at the end with
`log_params_on_trial_end=True`); every numeric result field is a metric at step
`training_iteration`; the run ends FINISHED or FAILED; `save_artifact=True` uploads the
trial directory as the run's artifacts.
"""

from __future__ import annotations

import numbers
import os
from typing import Any

from ray.tune.error import TuneError
from ray.tune.logger import LoggerCallback, flatten_dict
from ray.tune.result import TRAINING_ITERATION


class MLflowLoggerCallback(LoggerCallback):
    """See the module docstring."""

    def __init__(
        self,
        tracking_uri: str | None = None,
        *,
        registry_uri: str | None = None,
        experiment_name: str | None = None,
        tags: dict | None = None,
        tracking_token: str | None = None,
        save_artifact: bool = False,
        log_params_on_trial_end: bool = False,
    ):
        try:
            import mlflow  # noqa: F401
        except ImportError as exc:
            raise TuneError(
                "MLflowLoggerCallback needs mlflow: pip install mlflow-skinny (or mlflow)"
            ) from exc
        self.tracking_uri = tracking_uri
        self.registry_uri = registry_uri
        self.experiment_name = experiment_name
        self.tags = dict(tags or {})
        self.tracking_token = tracking_token
        self.save_artifact = save_artifact
        self.log_params_on_trial_end = log_params_on_trial_end
        self._client = None
        self._experiment_id: str | None = None
        self._runs: dict[str, str] = {}  # trial_id -> run id

    def setup(self, *args: Any, **kwargs: Any) -> None:
        from mlflow.tracking import MlflowClient

        if self.tracking_token:
            os.environ["MLFLOW_TRACKING_TOKEN"] = self.tracking_token
        self._client = MlflowClient(tracking_uri=self.tracking_uri, registry_uri=self.registry_uri)
        name = self.experiment_name or os.environ.get("MLFLOW_EXPERIMENT_NAME")
        experiment_id = os.environ.get("MLFLOW_EXPERIMENT_ID")
        if name:
            existing = self._client.get_experiment_by_name(name)
            experiment_id = (existing.experiment_id if existing is not None
                             else self._client.create_experiment(name))
        self._experiment_id = experiment_id or "0"

    def _client_or_setup(self):
        if self._client is None:
            self.setup()
        return self._client

    def log_trial_start(self, trial) -> None:
        client = self._client_or_setup()
        if trial.trial_id in self._runs:
            return  # resumed after a pause: the same run goes on
        tags = {"trial_name": str(trial), "trial_id": trial.trial_id, **self.tags}
        run = client.create_run(self._experiment_id, tags=tags, run_name=str(trial))
        self._runs[trial.trial_id] = run.info.run_id
        if not self.log_params_on_trial_end:
            self._log_params(run.info.run_id, trial.config)

    def _log_params(self, run_id: str, config: dict) -> None:
        from mlflow.entities import Param

        params = [Param(str(k), str(v)[:6000]) for k, v in flatten_dict(config).items()]
        for start in range(0, len(params), 100):
            self._client.log_batch(run_id, params=params[start:start + 100])

    def log_trial_result(self, iteration: int, trial, result: dict) -> None:
        from mlflow.entities import Metric

        if trial.trial_id not in self._runs:
            self.log_trial_start(trial)
        step = int(result.get(TRAINING_ITERATION) or 0)
        import time

        now = int(time.time() * 1000)
        metrics = [
            Metric(key.replace(":", "_"), float(value), now, step)
            for key, value in flatten_dict(result).items()
            if isinstance(value, numbers.Number) and not isinstance(value, bool)
            and not key.startswith("config/")
        ]
        if metrics:
            self._client.log_batch(self._runs[trial.trial_id], metrics=metrics)

    def log_trial_end(self, trial, failed: bool = False) -> None:
        run_id = self._runs.pop(trial.trial_id, None)
        if run_id is None:
            return
        if self.save_artifact and trial.logdir and os.path.isdir(trial.logdir):
            self._client.log_artifacts(run_id, trial.logdir)
        if self.log_params_on_trial_end:
            self._log_params(run_id, trial.config)
        self._client.set_terminated(run_id, status="FAILED" if failed else "FINISHED")
