"""A trial: one configuration of one trainable, and everything the controller knows about it.

The controller owns `Trial` objects and is the only code that changes them; schedulers
and searchers see `TrialView`s, which read like a Trial but refuse assignment.
"""

from __future__ import annotations

import base64
import os
import tempfile
import time
import uuid
from dataclasses import dataclass
from typing import Any

from ray.tune import result as R
from ray.tune.error import TuneError
from ray.tune.resources import Resources

DEFAULT_RESULTS_DIR = os.path.expanduser(os.environ.get("TUNE_RESULT_DIR", "~/ray_results"))
_MAX_NAME_LEN = 80


@dataclass(frozen=True)
class Checkpoint:
    """Where a trial's state is saved: a path on disk or an in-memory object ref."""

    MEMORY = "memory"
    DISK = "disk"

    storage: str
    value: Any
    result: dict | None = None

    @property
    def iteration(self) -> int:
        return (self.result or {}).get(R.TRAINING_ITERATION, 0)


class Trial:
    """One configured run of a trainable. See the module docstring."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    TERMINATED = "TERMINATED"
    ERROR = "ERROR"
    STATUSES = (PENDING, RUNNING, PAUSED, TERMINATED, ERROR)

    def __init__(
        self,
        trainable_name: str,
        config: dict | None = None,
        trial_id: str | None = None,
        local_dir: str = DEFAULT_RESULTS_DIR,
        experiment_tag: str = "",
        resources: Resources | None = None,
        stopping_criterion: Any = None,
        checkpoint_freq: int = 0,
        checkpoint_at_end: bool = False,
        keep_checkpoints_num: int | None = None,
        checkpoint_score_attr: str = R.TRAINING_ITERATION,
        export_formats: list | None = None,
        restore_path: str | None = None,
        trial_name_creator: Any = None,
        loggers: Any = None,
        sync_to_driver_fn: Any = None,
        max_failures: int = 0,
        evaluated_params: dict | None = None,
        experiment_name: str | None = None,
        restart_without_checkpoint: bool = False,
    ):
        self.trainable_name = trainable_name
        self.config = config or {}
        self.trial_id = trial_id or uuid.uuid4().hex[:8]
        self.local_dir = local_dir
        self.experiment_tag = experiment_tag
        self.resources = resources or Resources(cpu=1, gpu=0)
        self.stopping_criterion = stopping_criterion if stopping_criterion is not None else {}
        self.checkpoint_freq = checkpoint_freq
        self.checkpoint_at_end = checkpoint_at_end
        self.keep_checkpoints_num = keep_checkpoints_num
        self.checkpoint_score_attr = checkpoint_score_attr
        self.export_formats = export_formats or []
        self.restore_path = restore_path
        self.trial_name_creator = trial_name_creator
        self.loggers = loggers
        self.sync_to_driver_fn = sync_to_driver_fn
        self.max_failures = max_failures
        # Ray 2.x retries a failed trial from scratch when it has no checkpoint; Ray 0.7
        # only retried trials that checkpoint (`tune.run` sets this when `max_failures`
        # is given explicitly, as 2.x code does).
        self.restart_without_checkpoint = restart_without_checkpoint
        self.evaluated_params = evaluated_params or {}
        self.experiment_name = experiment_name

        self.status = Trial.PENDING
        self.last_result: dict = {}
        self.last_update_time = -float("inf")
        self.start_time: float | None = None
        self.num_failures = 0
        self.error_msg: str | None = None
        self.error_file: str | None = None
        self.checkpoint: Checkpoint | None = (
            Checkpoint(Checkpoint.DISK, restore_path) if restore_path else None
        )
        self.disk_checkpoints: list[Checkpoint] = []
        self.metric_analysis: dict[str, dict[str, float]] = {}
        self.results_count = 0
        self.logdir: str | None = None
        self.export_paths: dict = {}
        self._view: TrialView | None = None

    # -- naming ---------------------------------------------------------------
    @staticmethod
    def generate_id() -> str:
        """A new trial id: 8 hex digits."""
        return uuid.uuid1().hex[:8]

    @staticmethod
    def create_logdir(identifier: str, local_dir: str) -> str:
        """A new, unique directory `<identifier>_<date>...` in `local_dir` (Ray 0.7)."""
        os.makedirs(os.path.expanduser(local_dir), exist_ok=True)
        prefix = f"{identifier[:_MAX_NAME_LEN]}_{time.strftime('%Y-%m-%d_%H-%M-%S')}"
        return tempfile.mkdtemp(prefix=prefix, dir=os.path.expanduser(local_dir))

    def __str__(self) -> str:
        if self.trial_name_creator is not None:
            return str(self.trial_name_creator(self))
        identifier = self.trainable_name
        if self.experiment_tag:
            identifier += "_" + self.experiment_tag
        return identifier.replace("/", "_")

    def __repr__(self) -> str:
        return f"Trial({self.trial_id}, {self!s}, {self.status})"

    def default_logdir(self) -> str:
        # `local_dir` is the experiment's directory (Ray 0.7: `local_dir/name`).
        return os.path.join(self.local_dir, f"{str(self)[:_MAX_NAME_LEN]}_{self.trial_id}")

    @property
    def view(self) -> TrialView:
        if self._view is None:
            self._view = TrialView(self)
        return self._view

    # -- state the controller updates ------------------------------------------
    def is_finished(self) -> bool:
        return self.status in (Trial.TERMINATED, Trial.ERROR)

    def has_checkpoint(self) -> bool:
        return self.checkpoint is not None

    def should_recover(self) -> bool:
        """Whether a trial that just failed is retried: `num_failures` counts this failure,
        so `max_failures=N` retries N times and the N+1-th failure is final (Ray 0.7 and
        2.x alike); -1 retries forever. A trial is retried from its latest checkpoint, or
        from the start when it has none and `restart_without_checkpoint` is set."""
        if not (self.max_failures < 0 or self.num_failures <= self.max_failures):
            return False
        checkpoints = self.checkpoint_freq > 0 or self.checkpoint is not None
        return checkpoints or self.restart_without_checkpoint

    def should_checkpoint(self) -> bool:
        result = self.last_result
        if result.get(R.SHOULD_CHECKPOINT):
            return True
        if self.checkpoint_freq <= 0:
            return False
        return result.get(R.TRAINING_ITERATION, 0) % self.checkpoint_freq == 0

    def update_last_result(self, result: dict, now_s: float) -> None:
        self.last_result = result
        self.last_update_time = now_s
        self.results_count += 1
        for metric, value in result.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            stats = self.metric_analysis.get(metric)
            if stats is None:
                self.metric_analysis[metric] = {"max": value, "min": value, "last": value}
            else:
                stats["max"] = max(stats["max"], value)
                stats["min"] = min(stats["min"], value)
                stats["last"] = value

    # -- persistence (experiment checkpoint) -----------------------------------
    _PICKLED_FIELDS = ("config", "stopping_criterion", "trial_name_creator", "loggers",
                       "sync_to_driver_fn", "evaluated_params", "export_paths")

    def cached_json(self) -> dict:
        """`to_json()`, recomputed only when something it records has changed."""
        key = (
            self.status, self.results_count, self.num_failures, len(self.disk_checkpoints),
            self.experiment_tag, id(self.config), self.logdir, self.error_msg,
        )
        if getattr(self, "_json_key", None) != key:
            self._json = self.to_json()
            self._json_key = key
        return self._json

    def to_json(self) -> dict:
        """A JSON-able snapshot; in-memory checkpoints are dropped (they die with the driver)."""
        import cloudpickle

        data = {
            "trainable_name": self.trainable_name,
            "trial_id": self.trial_id,
            "local_dir": self.local_dir,
            "experiment_tag": self.experiment_tag,
            "experiment_name": self.experiment_name,
            "resources": self.resources.to_json(),
            "checkpoint_freq": self.checkpoint_freq,
            "checkpoint_at_end": self.checkpoint_at_end,
            "keep_checkpoints_num": self.keep_checkpoints_num,
            "checkpoint_score_attr": self.checkpoint_score_attr,
            "export_formats": list(self.export_formats),
            "restore_path": self.restore_path,
            "max_failures": self.max_failures,
            "restart_without_checkpoint": self.restart_without_checkpoint,
            "status": self.status,
            "num_failures": self.num_failures,
            "error_msg": self.error_msg,
            "error_file": self.error_file,
            "logdir": self.logdir,
            "results_count": self.results_count,
            "last_update_time": self.last_update_time if self.last_update_time > 0 else None,
            "metric_analysis": self.metric_analysis,
            "last_result": _jsonable(self.last_result),
            "checkpoint": _disk_checkpoint_json(self),
            "disk_checkpoints": [
                {"value": c.value, "result": _jsonable(c.result)} for c in self.disk_checkpoints
            ],
            "pickled": base64.b64encode(
                cloudpickle.dumps({name: getattr(self, name) for name in self._PICKLED_FIELDS})
            ).decode("ascii"),
        }
        return data

    @classmethod
    def from_json(cls, data: dict) -> Trial:
        import cloudpickle

        pickled = cloudpickle.loads(base64.b64decode(data["pickled"]))
        trial = cls(
            data["trainable_name"],
            config=pickled["config"],
            trial_id=data["trial_id"],
            local_dir=data["local_dir"],
            experiment_tag=data["experiment_tag"],
            resources=Resources.from_json(data["resources"]),
            stopping_criterion=pickled["stopping_criterion"],
            checkpoint_freq=data["checkpoint_freq"],
            checkpoint_at_end=data["checkpoint_at_end"],
            keep_checkpoints_num=data["keep_checkpoints_num"],
            checkpoint_score_attr=data["checkpoint_score_attr"],
            export_formats=data["export_formats"],
            restore_path=data["restore_path"],
            trial_name_creator=pickled["trial_name_creator"],
            loggers=pickled["loggers"],
            sync_to_driver_fn=pickled["sync_to_driver_fn"],
            max_failures=data["max_failures"],
            evaluated_params=pickled["evaluated_params"],
            experiment_name=data["experiment_name"],
            restart_without_checkpoint=data.get("restart_without_checkpoint", False),
        )
        trial.status = data["status"]
        trial.num_failures = data["num_failures"]
        trial.error_msg = data["error_msg"]
        trial.error_file = data["error_file"]
        trial.logdir = data["logdir"]
        trial.results_count = data["results_count"]
        trial.last_update_time = data.get("last_update_time") or -float("inf")
        trial.metric_analysis = data["metric_analysis"]
        trial.last_result = data["last_result"]
        trial.export_paths = pickled["export_paths"]
        if data["checkpoint"]:
            trial.checkpoint = Checkpoint(
                Checkpoint.DISK, data["checkpoint"]["value"], data["checkpoint"]["result"]
            )
        else:
            trial.checkpoint = None
        trial.disk_checkpoints = [
            Checkpoint(Checkpoint.DISK, c["value"], c["result"]) for c in data["disk_checkpoints"]
        ]
        return trial


class TrialView:
    """Read-only access to a Trial for schedulers, searchers and loggers."""

    __slots__ = ("_trial",)

    def __init__(self, trial: Trial):
        object.__setattr__(self, "_trial", trial)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._trial, name)

    # What schedulers read on every decision: plain properties, not `__getattr__`.
    @property
    def status(self) -> str:
        return self._trial.status

    @property
    def trial_id(self) -> str:
        return self._trial.trial_id

    @property
    def resources(self) -> Resources:
        return self._trial.resources

    @property
    def config(self) -> dict:
        return self._trial.config

    @property
    def last_result(self) -> dict:
        return self._trial.last_result

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(
            f"trial views are read-only (tried to set {name!r}); schedulers and searchers "
            "return decisions instead of changing trials"
        )

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TrialView):
            return self._trial is other._trial
        return self._trial is other

    def __hash__(self) -> int:
        return hash(self._trial.trial_id)

    def __str__(self) -> str:
        return str(self._trial)

    def __repr__(self) -> str:
        return repr(self._trial)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        try:
            return value.item()
        except (TypeError, ValueError):
            pass
    return repr(value)


def _disk_checkpoint_json(trial: Trial) -> dict | None:
    checkpoint = trial.checkpoint
    if checkpoint is None or checkpoint.storage != Checkpoint.DISK:
        if trial.disk_checkpoints:
            checkpoint = trial.disk_checkpoints[-1]
        else:
            return None
    return {"value": checkpoint.value, "result": _jsonable(checkpoint.result)}


def now_s() -> float:
    return time.time()


def validate_trainable_name(name: str) -> None:
    if not isinstance(name, str) or not name:
        raise TuneError(f"trainable name must be a non-empty string, got {name!r}")
