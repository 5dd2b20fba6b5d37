"""`tune.Tuner` (Ray 2.x): a thin front over `tune.run`.

    Tuner(trainable, param_space=..., tune_config=TuneConfig(...), run_config=RunConfig(...))

maps to `tune.run(trainable, config=param_space, ...)` like this:

    TuneConfig.metric/mode/search_alg/scheduler/num_samples/max_concurrent_trials
        -> the same tune.run arguments (metric/mode also reach the searcher and scheduler)
    TuneConfig.time_budget_s      -> every trial stops at its first result after the budget
    RunConfig.name/storage_path   -> name/local_dir (the experiment is storage_path/name)
    RunConfig.stop                -> stop
    CheckpointConfig              -> checkpoint_freq/checkpoint_at_end/keep_checkpoints_num/
                                     checkpoint_score_attr
    FailureConfig.max_failures    -> max_failures (2.x default 0: a failed trial is an error)
    tune.with_resources(...)      -> resources_per_trial

`fit()` never raises for failed trials: they are in `ResultGrid.errors`. The Tuner's
settings are pickled into the experiment directory (`tuner.pkl`), so
`Tuner.restore(path, trainable)` continues an interrupted experiment: finished trials
stay finished, unfinished ones resume from their latest checkpoint.
"""

from __future__ import annotations

import functools
import inspect
import os
import time
from datetime import datetime
from typing import Any

import cloudpickle

import ray
from ray.tune import experiment_state as ES
from ray.tune.config import RunConfig, ScalingConfig, TuneConfig
from ray.tune.error import TuneError
from ray.tune.result_grid import ResultGrid
from ray.tune.storage import is_uri, uri_split
from ray.tune.trainable import Trainable

_SETTINGS_FILE = "tuner.pkl"


class Tuner:
    """See the module docstring."""

    def __init__(
        self,
        trainable: Any = None,
        *,
        param_space: dict | None = None,
        tune_config: TuneConfig | None = None,
        run_config: RunConfig | None = None,
    ):
        if trainable is None:
            raise TuneError("Tuner() needs a trainable: a function, a Trainable class or a name")
        if param_space is not None and not isinstance(param_space, dict):
            raise TuneError(f"Tuner(param_space=...) must be a dict, got {type(param_space).__name__}")
        self._trainable = trainable
        self._param_space = dict(param_space or {})
        self._tune_config = tune_config or TuneConfig()
        self._run_config = run_config or RunConfig()
        self._resume: bool | str = False
        self._results: ResultGrid | None = None
        self._name = self._run_config.name or _default_name(trainable)

    @property
    def experiment_path(self) -> str:
        """Where the experiment is stored: a local directory, or the remote URI/path."""
        storage = self._storage()
        if storage.is_remote:
            return storage.uri or storage.remote_dir
        return storage.local_dir

    def _storage(self):
        from ray.tune.storage import ExperimentStorage

        rc = self._run_config
        return ExperimentStorage.create(
            rc.storage_path or rc.local_dir, self._name, storage_filesystem=rc.storage_filesystem)

    # -- running ---------------------------------------------------------------
    def fit(self) -> ResultGrid:
        """Runs (or continues, after `restore`) the experiment; failed trials are in `.errors`."""
        from ray.tune.tune import run

        tc, rc = self._tune_config, self._run_config
        storage = self._storage()
        os.makedirs(storage.local_dir, exist_ok=True)
        self._save_settings(storage.local_dir)
        cc, fc = rc.checkpoint_config, rc.failure_config
        trials = run(
            self._trainable,
            name=self._name,
            config=self._param_space,
            stop=_with_time_budget(rc.stop, tc.time_budget_s),
            resources_per_trial=getattr(self._trainable, "_tune_resources", None),
            num_samples=tc.num_samples,
            storage_path=rc.storage_path or rc.local_dir or os.path.dirname(storage.local_dir),
            storage_filesystem=rc.storage_filesystem,
            progress_reporter=rc.progress_reporter,
            sync_config=rc.sync_config,
            trial_name_creator=tc.trial_name_creator,
            checkpoint_freq=cc.checkpoint_frequency,
            checkpoint_at_end=bool(cc.checkpoint_at_end),
            keep_checkpoints_num=cc.num_to_keep,
            checkpoint_score_attr=cc.score_attr(),
            max_failures=fc.max_failures,
            search_alg=tc.search_alg,
            scheduler=tc.scheduler,
            verbose=1 if rc.verbose is None else rc.verbose,
            resume=self._resume,
            reuse_actors=True if tc.reuse_actors is None else tc.reuse_actors,
            raise_on_failed_trial=False,
            metric=tc.metric,
            mode=tc.mode,
            max_concurrent_trials=tc.max_concurrent_trials,
            callbacks=rc.callbacks,
        )
        self._results = ResultGrid.from_trials(
            list(trials), self.experiment_path, metric=tc.metric, mode=tc.mode, storage=storage
        )
        if fc.fail_fast and self._results.errors:
            raise self._results.errors[0]
        return self._results

    def get_results(self) -> ResultGrid:
        """The last `fit()`'s results, or those stored in the experiment directory."""
        if self._results is not None:
            return self._results
        storage = self._storage()
        if storage.is_remote:
            storage.sync_down()
        trials = _load_trials(storage.local_dir)
        tc = self._tune_config
        return ResultGrid.from_trials(trials, self.experiment_path, tc.metric, tc.mode,
                                      storage=storage)

    # -- restoring -------------------------------------------------------------
    @classmethod
    def can_restore(cls, path: str | os.PathLike, storage_filesystem: Any = None) -> bool:
        """Whether `path` (a directory or a URI) holds an experiment `Tuner.restore` can continue."""
        path = os.fspath(path)
        if is_uri(path) or storage_filesystem is not None:
            storage = _remote_storage(path, storage_filesystem)
            files = set(storage._remote_files())
            return _SETTINGS_FILE in files and any(
                f.startswith("experiment_state-") for f in files)
        path = os.path.expanduser(path)
        return os.path.exists(os.path.join(path, _SETTINGS_FILE)) and (
            ES.find_state_file(path) is not None
        )

    @classmethod
    def restore(
        cls,
        path: str | os.PathLike,
        trainable: Any,
        *,
        resume_unfinished: bool = True,
        resume_errored: bool = False,
        restart_errored: bool = False,
        param_space: dict | None = None,
        storage_filesystem: Any = None,
    ) -> Tuner:
        """A Tuner that continues the experiment in `path` (pass the same trainable again).

        `path` is the experiment directory (`storage_path/name`), or its URI for remote
        storage: the remote copy is downloaded into the local staging directory first.
        """
        path = os.fspath(path)
        if not cls.can_restore(path, storage_filesystem):
            raise TuneError(
                f"Tuner.restore({path!r}): no Tuner experiment there (needs {_SETTINGS_FILE} and "
                "an experiment_state file); pass the directory Tuner.fit() wrote, "
                "i.e. storage_path/name"
            )
        if is_uri(path) or storage_filesystem is not None:
            storage = _remote_storage(path, storage_filesystem)
            storage.sync_down()
            local = storage.local_dir
            parent, name = (uri_split(path) if is_uri(path)
                            else (path.rstrip("/").rsplit("/", 1)[0], path.rstrip("/").rsplit("/", 1)[1]))
        else:
            local = os.path.abspath(os.path.expanduser(path))
            parent, name = os.path.dirname(local), os.path.basename(local)
        with open(os.path.join(local, _SETTINGS_FILE), "rb") as f:
            settings = cloudpickle.load(f)
        run_config = RunConfig(
            **{**settings["run_config"], "name": name, "storage_path": parent, "local_dir": None,
               "storage_filesystem": storage_filesystem}
        )
        tuner = cls(
            trainable,
            param_space=param_space if param_space is not None else settings["param_space"],
            tune_config=settings["tune_config"],
            run_config=run_config,
        )
        if restart_errored:
            tuner._resume = "RESTART_ERRORED"
        elif resume_errored:
            tuner._resume = "RESUME_ERRORED"
        else:
            tuner._resume = True
        if not resume_unfinished:
            tuner._resume = f"{tuner._resume}+NO_UNFINISHED" if tuner._resume is not True else (
                "NO_UNFINISHED"
            )
        return tuner

    def _save_settings(self, local_dir: str) -> None:
        rc = self._run_config
        settings = {
            "param_space": self._param_space,
            "tune_config": self._tune_config,
            "run_config": {
                "stop": rc.stop,
                "callbacks": rc.callbacks,
                "checkpoint_config": rc.checkpoint_config,
                "failure_config": rc.failure_config,
                "verbose": rc.verbose,
                "progress_reporter": rc.progress_reporter,
                "sync_config": rc.sync_config,
            },
        }
        try:
            data = cloudpickle.dumps(settings)
        except Exception as exc:  # noqa: BLE001 - re-raised with the fix
            raise TuneError(
                f"cannot save the Tuner's settings for Tuner.restore ({type(exc).__name__}: {exc}); "
                "param_space, TuneConfig (searcher, scheduler), RunConfig.stop and callbacks must pickle"
            ) from exc
        with open(os.path.join(local_dir, _SETTINGS_FILE), "wb") as f:
            f.write(data)


def _remote_storage(path: str, storage_filesystem: Any):
    from ray.tune.storage import ExperimentStorage

    if is_uri(path):
        parent, name = uri_split(path)
    else:
        parent, _, name = path.rstrip("/").rpartition("/")
    return ExperimentStorage.create(parent, name, storage_filesystem=storage_filesystem)


def _default_name(trainable: Any) -> str:
    base = trainable if isinstance(trainable, str) else getattr(trainable, "__name__", "trainable")
    return f"{base}_{datetime.now().strftime('%Y-%m-%d_%H-%M-%S')}"


def _load_trials(experiment_path: str) -> list:
    from ray.tune.trial import Trial

    if ES.find_state_file(experiment_path) is None:
        raise TuneError(f"no experiment state in {experiment_path}: run Tuner.fit() first")
    return [Trial.from_json(t) for t in ES.load_state(experiment_path)["checkpoints"]]


class _TimeBudgetStop:
    """Stops every trial at its first result after `budget_s` (plus the user's own `stop`)."""

    def __init__(self, stop: Any, budget_s: float):
        self.stop = stop
        self.deadline = time.monotonic() + budget_s

    def __call__(self, trial_id: str, result: dict) -> bool:
        if time.monotonic() >= self.deadline:
            return True
        if callable(self.stop):
            return bool(self.stop(trial_id, result))
        return any(result.get(k, float("-inf")) >= v for k, v in (self.stop or {}).items())


def _with_time_budget(stop: Any, budget_s: float | None) -> Any:
    return stop if budget_s is None else _TimeBudgetStop(stop, budget_s)


# -- trainable wrappers ---------------------------------------------------------
def with_parameters(trainable: Any, **kwargs: Any) -> Any:
    """Passes large objects through the object store: `objective(config, data=...)`.

    Each value is `ray.put` once now; every trial fetches it with `ray.get`.
    """
    if not ray.is_initialized():
        ray.init()
    refs = {key: ray.put(value) for key, value in kwargs.items()}
    if inspect.isclass(trainable) and issubclass(trainable, Trainable):
        return _class_with_parameters(trainable, refs)
    if not callable(trainable):
        raise TuneError(f"with_parameters() needs a function or a Trainable class, got {trainable!r}")

    @functools.wraps(trainable)
    def inner(config):
        return trainable(config, **{key: ray.get(ref) for key, ref in refs.items()})

    del inner.__wrapped__  # the runner must see inner's one-argument signature
    return inner


def _class_with_parameters(cls: type, refs: dict) -> type:
    def setup(self, config):
        params = {key: ray.get(ref) for key, ref in refs.items()}
        for klass in cls.__mro__:
            if klass is Trainable:
                break
            if "setup" in klass.__dict__:
                return klass.__dict__["setup"](self, config, **params)
        return self._setup(config, **params)

    return type(cls.__name__, (cls,), {"setup": setup, "__module__": cls.__module__})


def with_resources(trainable: Any, resources: dict | ScalingConfig) -> Any:
    """The resources each trial of `trainable` needs: `{"cpu": 2, "gpu": 0.5}` or a ScalingConfig."""
    from ray.tune.execution.placement_groups import PlacementGroupFactory

    if isinstance(resources, ScalingConfig):
        resources = resources.as_resources()
    elif isinstance(resources, PlacementGroupFactory):
        pass
    elif not isinstance(resources, dict):
        raise TuneError(
            f"with_resources() takes a dict such as {{'cpu': 1, 'gpu': 0}} or a ScalingConfig, "
            f"got {type(resources).__name__}"
        )
    if isinstance(resources, dict):
        resources = {k.lower() if k.upper() in ("CPU", "GPU") else k: v
                     for k, v in resources.items()}
    if inspect.isclass(trainable):
        return type(trainable.__name__, (trainable,), {
            "_tune_resources": resources, "__module__": trainable.__module__,
        })
    if not callable(trainable):
        raise TuneError(f"with_resources() needs a function or a Trainable class, got {trainable!r}")

    @functools.wraps(trainable)
    def inner(*args, **kwargs):
        return trainable(*args, **kwargs)

    inner._tune_resources = resources
    return inner
