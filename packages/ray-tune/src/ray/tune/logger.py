"""Per-trial result loggers, run in the driver: JSON (`result.json`), CSV (`progress.csv`),
TensorBoard (tensorboardX, if installed), and custom `Logger` subclasses.
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


class JsonLogger(Logger):
    """Appends each result as one JSON line to `result.json`; writes `params.json`."""

    def _init(self) -> None:
        self.update_config(self.config)
        self._file = open(os.path.join(self.logdir, R.EXPR_RESULT_FILE), "a")  # noqa: SIM115

    def on_result(self, result: dict) -> None:
        self._file.write(json.dumps(result, cls=SafeFallbackEncoder) + "\n")

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

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()


class TBXLogger(Logger):
    """TensorBoard scalars (`tensorboard --logdir=~/ray_results/my_experiment`).

    Writes the event files itself (see `_tb_events`): importing tensorboardX pulls in
    torch, which costs seconds per experiment, and scalars are all Tune logs.
    """

    def _init(self) -> None:
        from ray.tune._tb_events import EventFileWriter

        self._writer = EventFileWriter(self.logdir)

    def on_result(self, result: dict) -> None:
        step = result.get(R.TIMESTEPS_TOTAL) or result.get(R.TRAINING_ITERATION, 0)
        scalars = {}
        for key, value in flatten_dict(result).items():
            if key.startswith("config/") or key in (R.TIMESTEPS_TOTAL, R.TRAINING_ITERATION):
                continue
            if isinstance(value, numbers.Number) and not isinstance(value, bool):
                scalars["ray/tune/" + key] = float(value)
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
