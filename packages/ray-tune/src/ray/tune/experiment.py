"""`tune.Experiment` and conversion of dict specs (`run_experiments({...})`) into Experiments."""

from __future__ import annotations

import difflib
import os
from typing import Any

from ray.tune.error import TuneError
from ray.tune.registry import trainable_name
from ray.tune.trial import DEFAULT_RESULTS_DIR

_SPEC_KEYS = (
    "run", "stop", "config", "resources_per_trial", "num_samples", "local_dir", "upload_dir",
    "trial_name_creator", "loggers", "sync_function", "checkpoint_freq", "checkpoint_at_end",
    "keep_checkpoints_num", "checkpoint_score_attr", "export_formats", "max_failures", "restore",
    "repeat", "trial_resources", "custom_loggers", "resources", "env",
)


class Experiment:
    """Tracks the spec of one experiment; registers `run` if it is a function or class."""

    def __init__(
        self,
        name: str,
        run: Any,
        stop: Any = None,
        config: dict | None = None,
        resources_per_trial: dict | None = None,
        num_samples: int = 1,
        local_dir: str | None = None,
        upload_dir: str | None = None,
        trial_name_creator: Any = None,
        loggers: Any = None,
        sync_function: Any = None,
        checkpoint_freq: int = 0,
        checkpoint_at_end: bool = False,
        keep_checkpoints_num: int | None = None,
        checkpoint_score_attr: str | None = None,
        export_formats: list | None = None,
        max_failures: int | None = None,  # None: 3 retries, for trials that checkpoint
        restore: str | None = None,
        repeat: int | None = None,
        trial_resources: dict | None = None,
        custom_loggers: Any = None,
    ):
        if repeat is not None:
            num_samples = repeat
        if trial_resources is not None:
            resources_per_trial = trial_resources
        if custom_loggers is not None:
            from ray.tune.logger import DEFAULT_LOGGERS

            loggers = list(loggers or DEFAULT_LOGGERS) + list(custom_loggers)
        if num_samples < 1:
            raise TuneError(f"num_samples must be >= 1, got {num_samples}")
        if stop is not None and not (isinstance(stop, dict) or callable(stop)):
            raise TuneError(f"stop must be a dict or a callable(trial_id, result), got {stop!r}")
        if max_failures is not None and (
            isinstance(max_failures, bool) or not isinstance(max_failures, int) or max_failures < -1
        ):
            raise TuneError(
                f"max_failures must be an int >= 0 (retries per trial) or -1 (retry forever), "
                f"got {max_failures!r}"
            )
        if checkpoint_freq < 0:
            raise TuneError(f"checkpoint_freq must be >= 0, got {checkpoint_freq}")
        self.name = name
        self._run = run
        self.spec = {
            "run": trainable_name(run),
            "stop": stop if stop is not None else {},
            "config": config or {},
            "resources_per_trial": resources_per_trial,
            "num_samples": num_samples,
            "local_dir": os.path.abspath(os.path.expanduser(local_dir or DEFAULT_RESULTS_DIR)),
            "upload_dir": upload_dir,
            "trial_name_creator": trial_name_creator,
            "loggers": loggers,
            "sync_function": sync_function,
            "checkpoint_freq": checkpoint_freq,
            "checkpoint_at_end": checkpoint_at_end,
            "keep_checkpoints_num": keep_checkpoints_num,
            "checkpoint_score_attr": checkpoint_score_attr,
            "export_formats": export_formats or [],
            "max_failures": max_failures,
            "restore": os.path.expanduser(restore) if restore else None,
        }

    @classmethod
    def from_json(cls, name: str, spec: dict) -> Experiment:
        """Builds an Experiment from a dict spec; unknown keys are rejected with a suggestion."""
        if "run" not in spec:
            raise TuneError(f"experiment {name!r} has no 'run' field")
        spec = dict(spec)
        for key in spec:
            if key not in _SPEC_KEYS:
                close = difflib.get_close_matches(key, _SPEC_KEYS, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise TuneError(f"unknown key {key!r} in experiment {name!r}{hint}")
        if "resources" in spec:  # the spelling of the original Tune blog post
            spec["resources_per_trial"] = spec.pop("resources")
        if "env" in spec:
            spec.setdefault("config", {})
            spec["config"] = {**spec["config"], "env": spec.pop("env")}
        return cls(name, spec.pop("run"), **spec)

    @property
    def local_dir(self) -> str:
        return self.spec["local_dir"]

    @property
    def checkpoint_dir(self) -> str:
        return os.path.join(self.spec["local_dir"], self.name)

    @property
    def run_identifier(self) -> str:
        return self.spec["run"]


def convert_to_experiment_list(experiments: Any) -> list[Experiment]:
    """Accepts an Experiment, a list of them, or a `{name: spec}` dict."""
    if experiments is None:
        return []
    if isinstance(experiments, Experiment):
        return [experiments]
    if isinstance(experiments, dict):
        return [
            spec if isinstance(spec, Experiment) else Experiment.from_json(name, spec)
            for name, spec in experiments.items()
        ]
    if isinstance(experiments, (list, tuple)) and all(isinstance(e, Experiment) for e in experiments):
        return list(experiments)
    raise TuneError(f"invalid experiments argument {experiments!r}: use Experiment(s) or a dict")
