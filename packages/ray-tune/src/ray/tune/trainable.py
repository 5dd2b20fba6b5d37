"""The class API: subclass `Trainable` and implement `setup/step/save_checkpoint/load_checkpoint`.

Both method families work: today's names (Ray 2.x: `setup`, `step`, `save_checkpoint`,
`load_checkpoint`, `cleanup`) and the 0.7 names (`_setup`, `_train`, `_save`, `_restore`,
`_stop`). The framework calls the new names; their defaults call the old ones, so a
subclass overriding either family works.

`train()` wraps `_train()` and fills in the bookkeeping fields (`training_iteration`,
`time_total_s`, `timesteps_total`, `experiment_id`, `date`, ...). A checkpoint is a
directory; `save_to_object()` packs that directory into bytes so a checkpoint can move
between processes through the object store (PBT, pausing).
"""

from __future__ import annotations

import io
import os
import pickle
import platform
import shutil
import socket
import tarfile
import tempfile
import time
import uuid
from datetime import datetime

from ray.tune import result as R

_META_SUFFIX = ".tune_metadata"


class Trainable:
    """Abstract class for trainable models, functions, etc.

    Subclasses implement `_setup(config)`, `_train() -> dict` and, to be checkpointable,
    `_save(checkpoint_dir) -> str | dict` and `_restore(path_or_dict)`.
    """

    def __init__(self, config: dict | None = None, logger_creator=None):
        self.config = config or {}
        self._experiment_id = uuid.uuid4().hex
        self._iteration = 0
        self._time_total = 0.0
        self._timesteps_total = None
        self._episodes_total = None
        self._time_since_restore = 0.0
        self._timesteps_since_restore = 0
        self._iterations_since_restore = 0
        self._restored = False
        if logger_creator is not None:
            # The executor's creator names the trial's log directory (results are
            # logged in the driver; the trainable only writes checkpoints there).
            self._result_logger = logger_creator(self.config)
            self._logdir = self._result_logger.logdir
            os.makedirs(self._logdir, exist_ok=True)
            self._owns_logdir = False
        else:
            self._result_logger = None
            self._logdir = tempfile.mkdtemp(prefix="tune_trainable_")
            self._owns_logdir = True
        self._hostname = socket.gethostname()
        self._node_ip = _node_ip()
        self._trial_id = getattr(logger_creator, "trial_id", None)
        self._trial_name = getattr(logger_creator, "trial_name", None)
        self._hook("setup", "_setup")(self.config)

    # -- hooks for subclasses -------------------------------------------------
    @classmethod
    def default_resource_request(cls, config: dict):
        """Returns a `Resources` object (or None for the default of 1 CPU)."""
        return None

    @classmethod
    def resource_help(cls, config: dict) -> str:
        return ""

    # Today's names (Ray 2.x); each defaults to its 0.7 counterpart below.
    def setup(self, config: dict) -> None:
        self._setup(config)

    def step(self) -> dict:
        return self._train()

    def save_checkpoint(self, checkpoint_dir: str) -> str | dict | None:
        """Writes state into `checkpoint_dir`; returns None/the dir, a file in it, or a dict."""
        return self._save(checkpoint_dir)

    def load_checkpoint(self, checkpoint: str | dict) -> None:
        """Gets what `save_checkpoint` returned: the directory (or file path), or the dict."""
        self._restore(checkpoint)

    def cleanup(self) -> None:
        self._stop()

    def log_result(self, result: dict) -> None:
        self._log_result(result)

    def export_model_files(self, export_formats: list, export_dir: str) -> dict:
        return self._export_model(export_formats, export_dir)

    # The 0.7 names.
    def _setup(self, config: dict) -> None:
        pass

    def _train(self) -> dict:
        raise NotImplementedError(f"{type(self).__name__} must implement step() (or _train())")

    def _save(self, checkpoint_dir: str) -> str | dict:
        raise NotImplementedError(
            f"{type(self).__name__} is not checkpointable: implement save_checkpoint() and "
            "load_checkpoint() (or the 0.7 names _save() and _restore()) "
            "(needed for checkpoint_freq, HyperBand, PBT and pausing)"
        )

    def _restore(self, checkpoint: str | dict) -> None:
        raise NotImplementedError(
            f"{type(self).__name__} must implement load_checkpoint() (or _restore())"
        )

    def _log_result(self, result: dict) -> None:
        pass

    def _stop(self) -> None:
        pass

    def _export_model(self, export_formats: list, export_dir: str) -> dict:
        return {}

    def _hook(self, new: str, old: str):
        """The subclass's `new`-named method if it defines one, else its `old`-named one.

        Looked up on the class, not the instance: 0.7 code often keeps state in
        attributes such as `self.step`, which must not hide the method.
        """
        for cls in type(self).__mro__:
            if cls is Trainable:
                break
            if new in cls.__dict__:
                return cls.__dict__[new].__get__(self, type(self))
        return getattr(self, old)

    # -- public API -------------------------------------------------------------
    @property
    def logdir(self) -> str:
        return self._logdir

    @property
    def iteration(self) -> int:
        return self._iteration

    @property
    def trial_dir(self) -> str:
        return self._logdir

    @property
    def trial_id(self) -> str:
        return self._trial_id or "default"

    @property
    def trial_name(self) -> str:
        return self._trial_name or "default"

    def get_config(self) -> dict:
        return self.config

    def train(self) -> dict:
        """Runs one logical iteration of `step()` and returns the filled-in result."""
        start = time.time()
        result = self._hook("step", "_train")()
        if not isinstance(result, dict):
            raise TypeError(f"{type(self).__name__}.step() must return a dict, got {result!r}")
        result = dict(result)
        self._iteration += 1
        self._iterations_since_restore += 1
        time_this_iter = result.get(R.TIME_THIS_ITER_S)
        if time_this_iter is None:
            time_this_iter = time.time() - start
        self._time_total += time_this_iter
        self._time_since_restore += time_this_iter
        result.setdefault(R.DONE, False)
        if result.get(R.TIMESTEPS_THIS_ITER) is not None:
            self._timesteps_total = (self._timesteps_total or 0) + result[R.TIMESTEPS_THIS_ITER]
            self._timesteps_since_restore += result[R.TIMESTEPS_THIS_ITER]
        if result.get(R.EPISODES_THIS_ITER) is not None:
            self._episodes_total = (self._episodes_total or 0) + result[R.EPISODES_THIS_ITER]
        result.setdefault(R.TIMESTEPS_TOTAL, self._timesteps_total)
        result.setdefault(R.EPISODES_TOTAL, self._episodes_total)
        result.setdefault(R.TRAINING_ITERATION, self._iteration)
        now = datetime.today()
        result.update(
            {
                R.EXPERIMENT_ID: self._experiment_id,
                R.DATE: now.strftime("%Y-%m-%d_%H-%M-%S"),
                R.TIMESTAMP: int(time.mktime(now.timetuple())),
                R.TIME_THIS_ITER_S: time_this_iter,
                R.TIME_TOTAL_S: self._time_total,
                R.PID: os.getpid(),
                R.HOSTNAME: self._hostname,
                R.NODE_IP: self._node_ip,
                R.CONFIG: self.config,
                R.TIME_SINCE_RESTORE: self._time_since_restore,
                R.TIMESTEPS_SINCE_RESTORE: self._timesteps_since_restore,
                R.ITERATIONS_SINCE_RESTORE: self._iterations_since_restore,
            }
        )
        self._hook("log_result", "_log_result")(result)
        return result

    def save(self, checkpoint_dir: str | None = None) -> str:
        """Saves a checkpoint under `checkpoint_dir` (default: the logdir); returns its path."""
        base = checkpoint_dir or self._logdir
        checkpoint_dir = os.path.join(base, f"checkpoint_{self._iteration}")
        os.makedirs(checkpoint_dir, exist_ok=True)
        saved = self._hook("save_checkpoint", "_save")(checkpoint_dir)
        if saved is None:  # Ray 2.x: the state is the directory itself
            checkpoint_path = checkpoint_dir
        elif isinstance(saved, str):
            if not os.path.abspath(saved).startswith(os.path.abspath(checkpoint_dir)):
                raise ValueError(
                    f"save_checkpoint() returned {saved!r}, which is outside the checkpoint "
                    f"directory {checkpoint_dir!r} it was given"
                )
            checkpoint_path = saved.rstrip(os.sep) if os.path.isdir(saved) else saved
        elif isinstance(saved, dict):
            checkpoint_path = os.path.join(checkpoint_dir, "checkpoint")
            with open(checkpoint_path, "wb") as f:
                pickle.dump(saved, f)
        else:
            raise TypeError(
                f"save_checkpoint() must return None, a path (str) or a dict, got {saved!r}"
            )
        self._write_metadata(checkpoint_path, self._iteration, saved_as_dict=isinstance(saved, dict))
        return checkpoint_path

    def _write_metadata(self, checkpoint_path: str, iteration: int, saved_as_dict: bool) -> None:
        """The counters `restore()` continues from, stored beside (or in) the checkpoint."""
        metadata = {
            "experiment_id": self._experiment_id,
            "iteration": iteration,
            "timesteps_total": self._timesteps_total,
            "time_total": self._time_total,
            "episodes_total": self._episodes_total,
            "saved_as_dict": saved_as_dict,
        }
        with open(_meta_path(checkpoint_path), "wb") as f:
            pickle.dump(metadata, f)

    def restore(self, checkpoint_path: str) -> None:
        """Restores from a path returned by `save()`; counters continue from the checkpoint."""
        with open(_meta_path(checkpoint_path), "rb") as f:
            metadata = pickle.load(f)
        self._experiment_id = metadata["experiment_id"]
        self._iteration = metadata["iteration"]
        self._timesteps_total = metadata["timesteps_total"]
        self._time_total = metadata["time_total"]
        self._episodes_total = metadata["episodes_total"]
        if metadata["saved_as_dict"]:
            with open(checkpoint_path, "rb") as f:
                self._hook("load_checkpoint", "_restore")(pickle.load(f))
        else:
            self._hook("load_checkpoint", "_restore")(checkpoint_path)
        self._restored = True
        self._time_since_restore = 0.0
        self._timesteps_since_restore = 0
        self._iterations_since_restore = 0

    def save_to_object(self) -> bytes:
        """Saves a checkpoint and packs its whole directory into bytes."""
        tmpdir = tempfile.mkdtemp(prefix="tune_save_")
        try:
            path = self.save(tmpdir)
            buffer = io.BytesIO()
            checkpoint_dir = path if os.path.isdir(path) else os.path.dirname(path)
            with tarfile.open(fileobj=buffer, mode="w") as tar:
                tar.add(checkpoint_dir, arcname="checkpoint")
            relpath = os.path.relpath(path, checkpoint_dir)
            return pickle.dumps({"relpath": relpath, "tar": buffer.getvalue()})
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)

    def restore_from_object(self, obj: bytes) -> None:
        """Restores from bytes produced by `save_to_object()` (possibly in another process)."""
        data = pickle.loads(obj)
        tmpdir = tempfile.mkdtemp(prefix="tune_restore_")
        try:
            with tarfile.open(fileobj=io.BytesIO(data["tar"]), mode="r") as tar:
                tar.extractall(tmpdir, filter="data")
            self.restore(os.path.normpath(os.path.join(tmpdir, "checkpoint", data["relpath"])))
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)

    def delete_checkpoint(self, checkpoint_dir: str) -> None:
        """Removes a checkpoint directory returned by `save()` (or the file inside it)."""
        path = checkpoint_dir if os.path.isdir(checkpoint_dir) else os.path.dirname(checkpoint_dir)
        shutil.rmtree(path, ignore_errors=True)

    def export_model(self, export_formats, export_dir: str | None = None) -> dict:
        """Exports the model in `export_formats`; returns {format: path}."""
        export_dir = export_dir or self._logdir
        if isinstance(export_formats, str):
            export_formats = [export_formats]
        return self._hook("export_model_files", "_export_model")(list(export_formats), export_dir)

    def reset_config(self, new_config: dict) -> bool:
        """Resets in place for a new config (actor reuse). Return True if supported."""
        return False

    def set_logdir(self, logdir: str) -> None:
        """Where checkpoints go by default (the trial's log directory on the driver's node)."""
        if self._owns_logdir:
            shutil.rmtree(self._logdir, ignore_errors=True)
            self._owns_logdir = False
        os.makedirs(logdir, exist_ok=True)
        self._logdir = logdir

    def reset_trial(self, new_config: dict, logdir: str, trial_id=None, trial_name=None) -> bool:
        """Executor hook for actor reuse: `reset_config`, then start counting afresh."""
        if trial_id is not None:
            self._trial_id, self._trial_name = trial_id, trial_name
        if not self.reset_config(new_config):
            return False
        self.config = new_config
        self.reset_counters()
        self.set_logdir(logdir)
        return True

    def reset_counters(self) -> None:
        """Starts a fresh trial in this (reused) instance."""
        self._experiment_id = uuid.uuid4().hex
        self._iteration = 0
        self._time_total = 0.0
        self._timesteps_total = None
        self._episodes_total = None
        self._time_since_restore = 0.0
        self._timesteps_since_restore = 0
        self._iterations_since_restore = 0
        self._restored = False

    def stop(self) -> None:
        """Releases resources; the instance is unusable afterwards."""
        self._hook("cleanup", "_stop")()
        if self._owns_logdir:
            shutil.rmtree(self._logdir, ignore_errors=True)

    def ping(self) -> str:
        return "pong"


def _meta_path(checkpoint_path: str) -> str:
    """The metadata beside a checkpoint file, or inside a checkpoint directory."""
    if os.path.isdir(checkpoint_path):
        return os.path.join(checkpoint_path, _META_SUFFIX)
    return checkpoint_path + _META_SUFFIX


def _node_ip() -> str:
    try:
        import ray

        get_ip = getattr(getattr(ray, "util", None), "get_node_ip_address", None) or getattr(
            ray, "get_node_ip_address", None
        )
        if get_ip is not None:
            return get_ip()
    except Exception:  # noqa: BLE001 - any failure falls back to the local address
        pass
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return platform.node() or "127.0.0.1"
