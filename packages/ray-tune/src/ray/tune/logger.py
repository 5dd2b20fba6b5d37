"""Result loggers, run in the driver: JSON (`result.json`), CSV (`progress.csv`),
TensorBoard event files, and custom ones.

Two interfaces, as in Ray:
- `LoggerCallback` (Ray 2.x): one object for the whole experiment, a `tune.Callback`
  with per-trial hooks `log_trial_start/result/save/restore/end`.
  `JsonLoggerCallback`, `CSVLoggerCallback` and `TBXLoggerCallback` are added to every
  run unless the run already has one of that kind (or `TUNE_DISABLE_AUTO_CALLBACK_LOGGERS=1`).
- `Logger` (Ray 0.7): one object per trial (`on_result`, `update_config`, `close`);
  `tune.run(loggers=[...])` replaces the defaults for that experiment's trials, and
  `LegacyLoggerCallback(classes)` runs Logger classes as a callback.
"""

from __future__ import annotations

import csv
import json
import logging
import numbers
import os
import pickle
from typing import Any

from ray.tune import result as R
from ray.tune.callback import Callback

logger = logging.getLogger(__name__)


class Logger:
    """Interface for loggers: `on_result(result)` for every result, then `close()`."""

    def __init__(self, config: dict, logdir: str, upload_uri: str | None = None):
        self.config = config
        self.logdir = logdir
        self.uri = upload_uri
        self._init()

    def _init(self) -> None:
        pass

    def on_result(self, result: dict) -> None:
        raise NotImplementedError

    def update_config(self, config: dict) -> None:
        pass

    def close(self) -> None:
        pass

    def flush(self) -> None:
        pass


class NoopLogger(Logger):
    def on_result(self, result: dict) -> None:
        pass


class TrialLogdirCreator:
    """The `logger_creator` executors hand a trial's Trainable: it writes checkpoints into
    the trial's directory (results are logged on the driver). It lives here, in a light
    module, because it travels to the trial's actor by reference: unpickling it there
    must not import the driver's loop."""

    def __init__(self, logdir: str, trial_id: str | None = None, trial_name: str | None = None):
        self.logdir = logdir
        self.trial_id = trial_id  # read by Trainable (and ray.train.get_context())
        self.trial_name = trial_name

    def __call__(self, config: dict) -> NoopLogger:
        return NoopLogger(config, self.logdir)


class JsonLogger(Logger):
    """Appends each result as one JSON line to `result.json`; writes `params.json`."""

    def _init(self) -> None:
        self.update_config(self.config)
        self._file = open(os.path.join(self.logdir, R.EXPR_RESULT_FILE), "a")  # noqa: SIM115

    def on_result(self, result: dict) -> None:
        self._file.write(json.dumps(result, cls=SafeFallbackEncoder) + "\n")
        self._file.flush()  # readable while the trial runs (as Ray's JsonLogger)

    def update_config(self, config: dict) -> None:
        self.config = config
        with open(os.path.join(self.logdir, R.EXPR_PARAM_FILE), "w") as f:
            json.dump(config, f, indent=2, sort_keys=True, cls=SafeFallbackEncoder)
        try:
            with open(os.path.join(self.logdir, R.EXPR_PARAM_PICKLE_FILE), "wb") as f:
                pickle.dump(config, f)
        except Exception:  # noqa: BLE001 - unpicklable configs are only logged as JSON
            pass

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()


class CSVLogger(Logger):
    """Writes flattened results to `progress.csv`; the columns come from the first result."""

    def _init(self) -> None:
        path = os.path.join(self.logdir, R.EXPR_PROGRESS_FILE)
        self._continuing = os.path.exists(path) and os.path.getsize(path) > 0
        self._file = open(path, "a", newline="")  # noqa: SIM115
        self._writer: csv.DictWriter | None = None

    def on_result(self, result: dict) -> None:
        flat = flatten_dict(result)
        if self._writer is None:
            fields = list(flat)
            if self._continuing:
                fields = _existing_header(os.path.join(self.logdir, R.EXPR_PROGRESS_FILE)) or fields
            self._writer = csv.DictWriter(self._file, fields, extrasaction="ignore")
            if not self._continuing:
                self._writer.writeheader()
        self._writer.writerow({k: v for k, v in flat.items() if k in self._writer.fieldnames})
        self._file.flush()

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def tb_scalars(result: dict) -> tuple[int, dict[str, float]]:
    """(step, {"ray/tune/<key>": value}) of a result's numeric fields, as Ray logs them."""
    step = result.get(R.TIMESTEPS_TOTAL) or result.get(R.TRAINING_ITERATION, 0)
    scalars = {}
    for key, value in flatten_dict(result).items():
        if key.startswith("config/") or key in (R.TIMESTEPS_TOTAL, R.TRAINING_ITERATION):
            continue
        if isinstance(value, numbers.Number) and not isinstance(value, bool):
            scalars["ray/tune/" + key] = float(value)
    return int(step or 0), scalars


class TBXLogger(Logger):
    """TensorBoard scalars (`tensorboard --logdir=~/ray_results/my_experiment`).

    Writes the event files itself (see `_tb_events`): importing tensorboardX pulls in
    torch, which costs seconds per experiment, and scalars are all Tune logs.
    """

    def _init(self) -> None:
        from ray.tune._tb_events import EventFileWriter

        self._writer = EventFileWriter(self.logdir)

    def on_result(self, result: dict) -> None:
        step, scalars = tb_scalars(result)
        self._writer.add_scalars(scalars, step)

    def flush(self) -> None:
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()


TFLogger = TBXLogger  # Ray 0.7 called the TensorBoard logger TFLogger

DEFAULT_LOGGERS = (JsonLogger, CSVLogger, TBXLogger)


class UnifiedLogger(Logger):
    """Fans results out to several loggers (DEFAULT_LOGGERS unless given)."""

    def __init__(self, config, logdir, upload_uri=None, loggers=None):
        self._logger_classes = list(DEFAULT_LOGGERS if loggers is None else loggers)
        super().__init__(config, logdir, upload_uri)

    def _init(self) -> None:
        os.makedirs(self.logdir, exist_ok=True)
        self._loggers = []
        for cls in self._logger_classes:
            try:
                self._loggers.append(cls(self.config, self.logdir, self.uri))
            except Exception:
                logger.exception("could not start logger %s for %s", cls.__name__, self.logdir)

    def on_result(self, result: dict) -> None:
        for each in self._loggers:
            each.on_result(result)

    def update_config(self, config: dict) -> None:
        for each in self._loggers:
            each.update_config(config)

    def flush(self) -> None:
        for each in self._loggers:
            each.flush()

    def close(self) -> None:
        for each in self._loggers:
            each.close()


# -- Ray 2.x logger callbacks ---------------------------------------------------------
class LoggerCallback(Callback):
    """Base class of experiment-wide loggers: override the `log_trial_*` methods."""

    def log_trial_start(self, trial) -> None:
        pass

    def log_trial_restore(self, trial) -> None:
        pass

    def log_trial_save(self, trial) -> None:
        pass

    def log_trial_result(self, iteration: int, trial, result: dict) -> None:
        pass

    def log_trial_end(self, trial, failed: bool = False) -> None:
        pass

    def on_trial_start(self, iteration, trials, trial, **info):
        self.log_trial_start(trial)

    def on_trial_restore(self, iteration, trials, trial, **info):
        self.log_trial_restore(trial)

    def on_trial_save(self, iteration, trials, trial, **info):
        self.log_trial_save(trial)

    def on_trial_result(self, iteration, trials, trial, result, **info):
        self.log_trial_result(iteration, trial, result)

    def on_trial_complete(self, iteration, trials, trial, **info):
        self.log_trial_end(trial, failed=False)

    def on_trial_error(self, iteration, trials, trial, **info):
        self.log_trial_end(trial, failed=True)

    def on_experiment_end(self, trials, **info):
        for trial in trials:
            if not trial.is_finished():
                self.log_trial_end(trial, failed=False)


class _PerTrialLoggerCallback(LoggerCallback):
    """A LoggerCallback that keeps one `Logger` per trial (opened on first use)."""

    def __init__(self):
        self._trial_loggers: dict[str, Logger] = {}

    def _new_logger(self, trial) -> Logger:
        raise NotImplementedError

    def _logger_for(self, trial) -> Logger:
        log = self._trial_loggers.get(trial.trial_id)
        if log is None:
            os.makedirs(trial.logdir, exist_ok=True)
            log = self._trial_loggers[trial.trial_id] = self._new_logger(trial)
        return log

    def log_trial_start(self, trial) -> None:
        log = self._trial_loggers.get(trial.trial_id)
        if log is None:
            self._logger_for(trial)
        else:
            log.update_config(trial.config)

    def log_trial_restore(self, trial) -> None:
        # PBT changed the running trial's config.
        self._logger_for(trial).update_config(trial.config)

    def log_trial_result(self, iteration: int, trial, result: dict) -> None:
        self._logger_for(trial).on_result(result)

    def log_trial_end(self, trial, failed: bool = False) -> None:
        log = self._trial_loggers.pop(trial.trial_id, None)
        if log is not None:
            log.close()


class JsonLoggerCallback(_PerTrialLoggerCallback):
    """Writes `params.json`/`params.pkl` and one JSON line per result (`result.json`)."""

    _SAVED_FILE_TEMPLATES = [R.EXPR_RESULT_FILE, R.EXPR_PARAM_FILE, R.EXPR_PARAM_PICKLE_FILE]

    def _new_logger(self, trial) -> Logger:
        return JsonLogger(trial.config, trial.logdir)


class CSVLoggerCallback(_PerTrialLoggerCallback):
    """Writes the flattened results to `progress.csv` (columns from the first result)."""

    _SAVED_FILE_TEMPLATES = [R.EXPR_PROGRESS_FILE]

    def _new_logger(self, trial) -> Logger:
        return CSVLogger(trial.config, trial.logdir)


class TBXLoggerCallback(_PerTrialLoggerCallback):
    """TensorBoard event files (`events.out.tfevents.*`) with each result's numeric
    fields as scalars `ray/tune/<key>`, step = `timesteps_total` or `training_iteration`.
    """

    _SAVED_FILE_TEMPLATES = ["events.out.tfevents.*"]

    def _new_logger(self, trial) -> Logger:
        return TBXLogger(trial.config, trial.logdir)


class LegacyLoggerCallback(LoggerCallback):
    """Runs 0.7-style `Logger` classes (one instance per trial per class) as a callback."""

    def __init__(self, logger_classes):
        self.logger_classes = list(logger_classes)
        for cls in self.logger_classes:
            if not (isinstance(cls, type) and issubclass(cls, Logger)):
                raise TypeError(f"LegacyLoggerCallback takes Logger subclasses, got {cls!r}")
        self._trial_loggers: dict[str, UnifiedLogger] = {}

    def _classes_for(self, trial) -> list:
        return self.logger_classes

    def _logger_for(self, trial) -> UnifiedLogger:
        log = self._trial_loggers.get(trial.trial_id)
        if log is None:
            log = UnifiedLogger(trial.config, trial.logdir, loggers=self._classes_for(trial))
            self._trial_loggers[trial.trial_id] = log
        return log

    def log_trial_start(self, trial) -> None:
        if trial.trial_id in self._trial_loggers:
            self._trial_loggers[trial.trial_id].update_config(trial.config)
        else:
            self._logger_for(trial)

    def log_trial_restore(self, trial) -> None:
        self._logger_for(trial).update_config(trial.config)

    def log_trial_result(self, iteration: int, trial, result: dict) -> None:
        self._logger_for(trial).on_result(result)

    def log_trial_end(self, trial, failed: bool = False) -> None:
        log = self._trial_loggers.pop(trial.trial_id, None)
        if log is not None:
            log.close()


class _ExperimentLoggers(LegacyLoggerCallback):
    """The `loggers=` of `tune.run`/`Experiment` (per experiment, so read from each trial)."""

    def __init__(self):
        super().__init__([])

    def _classes_for(self, trial) -> list:
        return list(trial.loggers)

    def log_trial_start(self, trial) -> None:
        if trial.loggers is not None:
            super().log_trial_start(trial)

    def log_trial_restore(self, trial) -> None:
        if trial.loggers is not None:
            super().log_trial_restore(trial)

    def log_trial_result(self, iteration: int, trial, result: dict) -> None:
        if trial.loggers is not None:
            super().log_trial_result(iteration, trial, result)


class _DefaultsForTrialsWithoutLoggers(LoggerCallback):
    """An auto-added logger callback, for the trials whose experiment did not name its
    own `loggers` (in Ray 0.7 those replace the defaults)."""

    def __init__(self, inner: LoggerCallback):
        self.inner = inner

    def log_trial_start(self, trial) -> None:
        if trial.loggers is None:
            self.inner.log_trial_start(trial)

    def log_trial_restore(self, trial) -> None:
        if trial.loggers is None:
            self.inner.log_trial_restore(trial)

    def log_trial_save(self, trial) -> None:
        if trial.loggers is None:
            self.inner.log_trial_save(trial)

    def log_trial_result(self, iteration: int, trial, result: dict) -> None:
        if trial.loggers is None:
            self.inner.log_trial_result(iteration, trial, result)

    def log_trial_end(self, trial, failed: bool = False) -> None:
        if trial.loggers is None:
            self.inner.log_trial_end(trial, failed)


def default_logger_callbacks(callbacks: list) -> list:
    """The callbacks a run uses: the user's, plus JSON/CSV/TensorBoard loggers of the kinds
    they lack (for trials without `loggers=`), plus one running `loggers=` classes."""
    out = list(callbacks)
    out.append(_ExperimentLoggers())
    if os.environ.get("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "0") == "1":
        return out
    present = set()
    for cb in callbacks:
        if isinstance(cb, LegacyLoggerCallback):
            present.update(cb.logger_classes)
        present.add(type(cb))
    wanted = ((JsonLoggerCallback, JsonLogger), (CSVLoggerCallback, CSVLogger),
              (TBXLoggerCallback, TBXLogger))
    for callback_cls, logger_cls in wanted:
        if not any(issubclass(p, (callback_cls, logger_cls)) for p in present):
            out.append(_DefaultsForTrialsWithoutLoggers(callback_cls()))
    return out


class SafeFallbackEncoder(json.JSONEncoder):
    """JSON that never fails: NaN stays NaN, numpy scalars become numbers, the rest repr()."""

    def default(self, value: Any) -> Any:
        if hasattr(value, "item") and callable(value.item):
            try:
                return value.item()
            except (TypeError, ValueError):
                pass
        if hasattr(value, "tolist") and callable(value.tolist):
            return value.tolist()
        return repr(value)


def flatten_dict(data: dict, prefix: str = "", delimiter: str = "/") -> dict:
    out = {}
    for key, value in data.items():
        name = f"{prefix}{delimiter}{key}" if prefix else str(key)
        if isinstance(value, dict):
            out.update(flatten_dict(value, name, delimiter))
        else:
            out[name] = value
    return out


def _existing_header(path: str) -> list[str] | None:
    with open(path, newline="") as f:
        row = next(csv.reader(f), None)
    return row


def pretty_print(result: dict) -> str:
    """A result as YAML (without the config), as printed by RLlib's examples."""
    data = json.loads(json.dumps({k: v for k, v in result.items() if k != R.CONFIG},
                                 cls=SafeFallbackEncoder))
    try:
        import yaml
    except ImportError:
        return json.dumps(data, indent=2, sort_keys=True)
    return yaml.safe_dump(data, default_flow_style=False)
