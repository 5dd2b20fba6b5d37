"""`tune.run` and `tune.run_experiments`: the I/O shell around the trial controller.

The loop: ask the controller for actions, let the executor carry them out, wait for
the next training result, log it, hand it to the controller; print the status table
and persist the experiment state as it goes.
"""

from __future__ import annotations

import difflib
import logging
import os
import queue
import time
from typing import Any

import ray
from ray.tune import controller as C
from ray.tune import experiment_state as ES
from ray.tune.callback import CallbackList
from ray.tune.error import TuneError
from ray.tune.experiment import Experiment, convert_to_experiment_list
from ray.tune.function_runner import CHECKPOINT_DIR_NAME
from ray.tune.progress_reporter import ProgressReporter, detect_reporter, trial_progress_str
from ray.tune.ray_executor import RayTrialExecutor
from ray.tune.schedulers import FIFOScheduler
from ray.tune.suggest.basic_variant import BasicVariantGenerator
from ray.tune.suggest.concurrency_limiter import ConcurrencyLimiter
from ray.tune.suggest.suggestion import SuggestionAlgorithm
from ray.tune.syncer import Syncer
from ray.tune.trial import Checkpoint as TrialCheckpoint
from ray.tune.trial import Trial

logger = logging.getLogger(__name__)

_RUN_ONLY_KWARGS = ("metric", "mode", "storage_path", "storage_filesystem", "max_concurrent_trials",
                    "sync_to_cloud", "sync_to_driver", "callbacks", "global_checkpoint_period",
                    "progress_reporter", "sync_config")


class ExperimentResults(list):
    """The list of Trials `tune.run` returns, with ExperimentAnalysis helpers on top."""

    def __init__(self, trials: list[Trial], checkpoint_dirs: list[str], metric=None, mode=None):
        super().__init__(trials)
        self.trials = list(trials)
        self._dirs = checkpoint_dirs
        self.default_metric = metric
        self.default_mode = mode or "max"

    @property
    def analysis(self):
        """The `ExperimentAnalysis` of the experiment (Ray 0.7's `tune.run` returned it)."""
        cached = self.__dict__.get("_analysis")
        if cached is None:
            from ray.tune.analysis import ExperimentAnalysis

            cached = self.__dict__["_analysis"] = ExperimentAnalysis(self._dirs[0], trials=self.trials)
        return cached

    def __getattr__(self, name: str):
        # Everything else an ExperimentAnalysis offers (stats(), trial_dataframes, ...).
        if name.startswith("__") or name in ("_dirs", "trials", "_analysis"):
            raise AttributeError(name)
        return getattr(self.analysis, name)

    def dataframe(self, *args, **kwargs):
        return self.analysis.dataframe(*args, **kwargs)

    def get_best_trial(self, metric: str | None = None, mode: str | None = None) -> Trial | None:
        metric = metric or self.default_metric
        if metric is None:
            raise TuneError("get_best_trial needs a metric (or tune.run(..., metric=...))")
        sign = 1 if (mode or self.default_mode) == "max" else -1
        scored = [t for t in self.trials if metric in t.last_result]
        return max(scored, key=lambda t: sign * t.last_result[metric]) if scored else None

    def get_best_config(self, metric: str | None = None, mode: str | None = None) -> dict | None:
        best = self.get_best_trial(metric, mode)
        return best.config if best else None

    def get_best_logdir(self, metric: str | None = None, mode: str | None = None) -> str | None:
        best = self.get_best_trial(metric, mode)
        return best.logdir if best else None

    @property
    def best_config(self) -> dict | None:
        return self.get_best_config()

    @property
    def best_trial(self) -> Trial | None:
        return self.get_best_trial()

    @property
    def best_result(self) -> dict | None:
        best = self.get_best_trial()
        return best.last_result if best else None


def run(
    run_or_experiment: Any,
    name: str | None = None,
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
    max_failures: int | None = None,
    restore: str | None = None,
    search_alg: Any = None,
    scheduler: Any = None,
    with_server: bool = False,
    server_port: int = 4321,
    verbose: int = 2,
    resume: bool | str = False,
    queue_trials: bool = False,
    reuse_actors: bool = True,
    trial_executor: Any = None,
    raise_on_failed_trial: bool = True,
    return_trials: bool = True,
    ray_auto_init: bool = True,
    **kwargs: Any,
):
    """Executes training; returns the list of Trials (with ExperimentAnalysis helpers).

    `max_failures=N` retries a failed trial N times (-1: forever) from its latest
    checkpoint, or from the start if it has none (Ray 2.x). Not given, trials that
    checkpoint are retried 3 times and others not at all (Ray 0.7's default).
    """
    for key in kwargs:
        if key not in _RUN_ONLY_KWARGS:
            known = list(run.__code__.co_varnames[: run.__code__.co_argcount]) + list(_RUN_ONLY_KWARGS)
            close = difflib.get_close_matches(key, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TuneError(f"tune.run() got an unexpected argument {key!r}{hint}")
    storage = None
    if kwargs.get("storage_path") is not None or kwargs.get("storage_filesystem") is not None:
        from ray.tune.storage import ExperimentStorage

        if isinstance(run_or_experiment, Experiment):
            raise TuneError("tune.run(storage_path=...) takes a trainable, not an Experiment; "
                            "give the Experiment local_dir= instead")
        storage = ExperimentStorage.create(
            kwargs.get("storage_path"), name or _default_name(run_or_experiment),
            storage_filesystem=kwargs.get("storage_filesystem"), staging_root=local_dir,
        )
        local_dir = os.path.dirname(storage.local_dir)
    if resources_per_trial is None:  # tune.with_resources(...)
        resources_per_trial = getattr(run_or_experiment, "_tune_resources", None)
    sync_function = sync_function or kwargs.get("sync_to_cloud")
    if isinstance(run_or_experiment, Experiment):
        experiment = run_or_experiment
    else:
        experiment = Experiment(
            name=name or _default_name(run_or_experiment),
            run=run_or_experiment,
            stop=stop,
            config=config,
            resources_per_trial=resources_per_trial,
            num_samples=num_samples,
            local_dir=local_dir,
            upload_dir=upload_dir,
            trial_name_creator=trial_name_creator,
            loggers=loggers,
            sync_function=sync_function,
            checkpoint_freq=checkpoint_freq,
            checkpoint_at_end=checkpoint_at_end,
            keep_checkpoints_num=keep_checkpoints_num,
            checkpoint_score_attr=checkpoint_score_attr,
            export_formats=export_formats,
            max_failures=max_failures,
            restore=restore,
        )
    return _run_experiments(
        [experiment],
        search_alg=search_alg,
        scheduler=scheduler,
        with_server=with_server,
        server_port=server_port,
        verbose=verbose,
        resume=resume,
        queue_trials=queue_trials,
        reuse_actors=reuse_actors,
        trial_executor=trial_executor,
        raise_on_failed_trial=raise_on_failed_trial,
        return_trials=return_trials,
        ray_auto_init=ray_auto_init,
        metric=kwargs.get("metric"),
        mode=kwargs.get("mode"),
        max_concurrent_trials=kwargs.get("max_concurrent_trials"),
        callbacks=kwargs.get("callbacks"),
        progress_reporter=kwargs.get("progress_reporter"),
        global_checkpoint_period=kwargs.get("global_checkpoint_period"),
        storage=storage,
        sync_config=kwargs.get("sync_config"),
    )


def run_experiments(
    experiments: Any,
    search_alg: Any = None,
    scheduler: Any = None,
    with_server: bool = False,
    server_port: int = 4321,
    verbose: int = 2,
    resume: bool | str = False,
    queue_trials: bool = False,
    reuse_actors: bool = False,
    trial_executor: Any = None,
    raise_on_failed_trial: bool = True,
):
    """Runs one or more experiments (Experiment objects or a `{name: spec}` dict)."""
    return _run_experiments(
        convert_to_experiment_list(experiments),
        search_alg=search_alg,
        scheduler=scheduler,
        with_server=with_server,
        server_port=server_port,
        verbose=verbose,
        resume=resume,
        queue_trials=queue_trials,
        reuse_actors=reuse_actors,
        trial_executor=trial_executor,
        raise_on_failed_trial=raise_on_failed_trial,
        return_trials=True,
        ray_auto_init=True,
    )


def _default_name(run_or_experiment: Any) -> str:
    if isinstance(run_or_experiment, str):
        return run_or_experiment
    return getattr(run_or_experiment, "__name__", "default")


def _run_experiments(
    experiments: list[Experiment],
    *,
    search_alg,
    scheduler,
    with_server,
    server_port,
    verbose,
    resume,
    queue_trials,
    reuse_actors,
    trial_executor,
    raise_on_failed_trial,
    return_trials,
    ray_auto_init,
    metric=None,
    mode=None,
    max_concurrent_trials=None,
    callbacks=None,
    progress_reporter=None,
    global_checkpoint_period=None,
    storage=None,
    sync_config=None,
):
    if progress_reporter is not None and not isinstance(progress_reporter, ProgressReporter):
        raise TuneError(
            f"progress_reporter must be a ray.tune.ProgressReporter (e.g. CLIReporter), got "
            f"{type(progress_reporter).__name__}"
        )
    if ray_auto_init and trial_executor is None and not ray.is_initialized():
        logger.info("Initializing Ray automatically: call ray.init() first to configure it")
        ray.init()
    from ray.tune import registry as _registry

    _registry._publish_all()  # names registered before ray.init reach the trial actors
    search_alg = search_alg or BasicVariantGenerator()
    scheduler = scheduler or FIFOScheduler()
    if metric is not None or mode is not None:
        scheduler.set_search_properties(metric, mode)
    if hasattr(search_alg, "set_search_properties"):
        # Ray 2.x searchers also take the search space (a searcher built without one).
        search_alg.set_search_properties(metric, mode, config=experiments[0].spec.get("config"))
    if max_concurrent_trials is not None and isinstance(search_alg, ConcurrencyLimiter):
        if search_alg.max_concurrent != max_concurrent_trials:
            raise TuneError(
                f"max_concurrent_trials={max_concurrent_trials} but the search_alg is a "
                f"ConcurrencyLimiter with max_concurrent={search_alg.max_concurrent}: "
                "leave max_concurrent_trials out (None) or make the two agree"
            )
    elif max_concurrent_trials is not None and isinstance(search_alg, SuggestionAlgorithm):
        if not search_alg.set_max_concurrency(max_concurrent_trials):
            search_alg._max_concurrent = max_concurrent_trials

    checkpoint_dir = experiments[0].checkpoint_dir
    executor = trial_executor or RayTrialExecutor(reuse_actors=reuse_actors)
    controller = C.TrialController(
        search_alg=search_alg,
        scheduler=scheduler,
        resources=_resource_pool(executor.cluster_resources()),
        queue_trials=queue_trials,
    )
    if max_concurrent_trials is not None:
        controller.resources.cpu = min(
            controller.resources.cpu,
            max_concurrent_trials * max(1e-9, _cpu_per_trial(experiments)),
        )
    shell = _Shell(
        controller, executor, experiments, verbose=verbose, metric=metric, mode=mode,
        checkpoint_dir=checkpoint_dir, callbacks=callbacks, reporter=progress_reporter,
        checkpoint_period_s=_checkpoint_period(global_checkpoint_period), storage=storage,
        sync_config=sync_config,
    )
    resumed = _maybe_resume(resume, checkpoint_dir, controller, search_alg, experiments,
                            shell.callbacks)
    if not resumed:
        search_alg.add_configurations(experiments)

    server = None
    if with_server:
        from ray.tune.web_server import TuneServer

        server = TuneServer(shell, port=server_port)
    try:
        shell.run(server)
    finally:
        if server is not None:
            server.shutdown()
    trials = controller.get_trials()
    errored = [t for t in trials if t.status == Trial.ERROR]
    if errored and raise_on_failed_trial:
        details = "\n".join(f"  {t} ({t.trial_id}): {_error_summary(t.error_msg)}" for t in errored)
        raise TuneError(f"Trials did not complete: {errored}\n{details}")
    dirs = [e.checkpoint_dir for e in experiments]
    results = ExperimentResults(trials, dirs, metric=metric, mode=mode)
    if not return_trials:
        return results.analysis
    return results


def _error_summary(message: str | None) -> str:
    """First and last lines of an error (the exception type and, at the end, its cause)."""
    lines = [line for line in (message or "").splitlines() if line.strip()]
    if len(lines) <= 2:
        return " ".join(lines)[:600]
    return f"{lines[0][:300]} ... {lines[-1][:300]}"


def _cpu_per_trial(experiments: list[Experiment]) -> float:
    spec = experiments[0].spec.get("resources_per_trial") or {}
    if hasattr(spec, "required_resources"):  # a PlacementGroupFactory
        return spec.required_resources.get("CPU", 1)
    cpu = spec.get("cpu", 1) if isinstance(spec, dict) else 1
    return cpu if isinstance(cpu, (int, float)) else 1


def _resource_pool(cluster: dict) -> C.ResourcePool:
    custom = {
        k: v
        for k, v in cluster.items()
        if k not in ("CPU", "GPU", "memory", "object_store_memory") and not k.startswith("node:")
    }
    return C.ResourcePool(cpu=cluster.get("CPU", 0), gpu=cluster.get("GPU", 0), custom=custom)


def _grid_size(config: dict) -> int:
    from ray.tune.suggest.variant_generator import grid_search_axes

    size = 1
    for _, values in grid_search_axes(config):
        size *= len(values)
    return size


def _checkpoint_period(period: float | None) -> float:
    """Seconds between experiment-state writes: `global_checkpoint_period` (Ray 0.7),
    else TUNE_GLOBAL_CHECKPOINT_S (Ray 2.x), else 0.5 (the write is cheap here)."""
    if period is None:
        period = float(os.environ.get("TUNE_GLOBAL_CHECKPOINT_S", 0.5))
    if period < 0:
        raise TuneError(f"global_checkpoint_period must be >= 0 seconds, got {period}")
    return float(period)


def _maybe_resume(resume, checkpoint_dir, controller, search_alg, experiments, callbacks) -> bool:
    if not resume:
        return False
    state_file = ES.find_state_file(checkpoint_dir)
    if state_file is None:
        logger.warning("resume=True but no experiment state in %s: starting fresh", checkpoint_dir)
        return False
    if resume == "prompt":
        answer = input(f"Resume the experiment in {checkpoint_dir}? [Y/n] ").strip().lower()
        if answer not in ("", "y", "yes"):
            return False
    data = ES.load_state(checkpoint_dir)
    written_in = data.get("runner_data", {}).get("experiment_dir")
    records = data["checkpoints"]
    if written_in and os.path.abspath(written_in) != os.path.abspath(checkpoint_dir):
        # Downloaded from remote storage, or the directory was moved: rebase its paths.
        records = ES.rebase_paths(records, written_in, checkpoint_dir)
    trials = [Trial.from_json(t) for t in records]
    for trial in trials:
        _resume_status(trial, resume if isinstance(resume, str) else "")
        controller.add_trial(trial)
    searcher_state = ES.load_searcher_state(data)
    if searcher_state is not None:
        search_alg.restore_state(searcher_state)
    callback_states = ES.load_callback_state(data)
    if callback_states:
        callbacks.set_state(callback_states)
    if not search_alg.is_finished():
        remaining = []
        for experiment in experiments:
            done = sum(1 for t in trials if t.experiment_name == experiment.name)
            left = experiment.spec["num_samples"] - done
            if isinstance(search_alg, SuggestionAlgorithm) and left > 0:
                exp = Experiment.__new__(Experiment)
                exp.__dict__.update(experiment.__dict__)
                exp.spec = {**experiment.spec, "num_samples": left}
                remaining.append(exp)
        if remaining:
            search_alg.add_configurations(remaining)
        elif not isinstance(search_alg, SuggestionAlgorithm):
            search_alg.set_finished()
    return True


def _resume_status(trial: Trial, mode: str) -> None:
    """What a resumed trial does; `mode` may hold RESUME_ERRORED, RESTART_ERRORED, NO_UNFINISHED."""
    if trial.status in (Trial.RUNNING, Trial.PAUSED):
        trial.status = Trial.PENDING  # continues from its last disk checkpoint, if any
    if trial.status == Trial.PENDING and "NO_UNFINISHED" in mode:
        trial.status = Trial.TERMINATED
    if trial.status == Trial.ERROR and ("RESUME_ERRORED" in mode or "RESTART_ERRORED" in mode):
        trial.status = Trial.PENDING
        trial.num_failures = 0
        trial.error_msg = None
        if "RESTART_ERRORED" in mode:
            trial.checkpoint = None
            trial.disk_checkpoints = []


class _Shell:
    """Runs the controller with the executor, callbacks (loggers), reporter and state file."""

    def __init__(
        self, controller, executor, experiments, *, verbose, metric, mode, checkpoint_dir,
        callbacks=None, reporter=None, checkpoint_period_s=0.5, storage=None, sync_config=None,
    ):
        from ray.tune.logger import default_logger_callbacks
        from ray.tune.storage import PeriodicSync

        self.controller = controller
        self.executor = executor
        self.experiments = experiments
        self.verbose = verbose
        self.metric = metric
        self.mode = mode or "max"
        self.checkpoint_dir = checkpoint_dir
        self.callbacks = CallbackList(default_logger_callbacks(callbacks or []), controller.get_trials)
        if reporter is None and verbose >= 1:
            reporter = detect_reporter(metric=metric, mode=mode)
        self.reporter = reporter if verbose >= 1 else None
        self.state = ES.ExperimentStateWriter(checkpoint_dir, min_interval_s=checkpoint_period_s)
        self.storage = storage
        from ray.tune.config import SyncConfig

        self.sync_config = sync_config or SyncConfig()
        self._sync = PeriodicSync(storage, self.sync_config.sync_period) if storage else None
        self._new_checkpoint = False  # registered since the last upload
        self._requests: queue.Queue = queue.Queue()
        self._syncers = [
            Syncer(e.checkpoint_dir, os.path.join(e.spec["upload_dir"], e.name), e.spec["sync_function"])
            for e in experiments
            if e.spec.get("upload_dir")
        ]

    # -- the loop ----------------------------------------------------------------
    def run(self, server=None) -> None:
        c = self.controller
        num_samples = sum(e.spec["num_samples"] for e in self.experiments)
        total = sum(e.spec["num_samples"] * _grid_size(e.spec.get("config") or {})
                    for e in self.experiments)
        stop = self.experiments[0].spec.get("stop") if len(self.experiments) == 1 else None
        self.callbacks.call("setup", stop=stop, num_samples=num_samples, total_num_samples=total)
        if self.reporter is not None:
            self.reporter.setup(start_time=time.time(), metric=self.metric,
                                mode=self.mode if self.metric else None)
        finished = False
        try:
            self.callbacks.step_begin()
            self._do(c.step())
            while not c.is_finished():
                self.callbacks.step_end()
                self.callbacks.step_begin()
                if server is not None:
                    self._serve_requests()
                event = self.executor.next_event(timeout_s=0.1 if server is not None else 5.0)
                if event is not None:
                    trial, result, error = event
                    if error is None:
                        actions, reported = self._on_reported_checkpoint(trial, result)
                        actions += c.on_result(trial, result)
                        self.callbacks.call("on_trial_result", trial=trial, result=trial.last_result)
                        if reported is not None:
                            self._checkpoint_callbacks(trial, reported)
                        if self.verbose >= 2 and self.reporter is not None:
                            print(f"Result for {trial}: {trial_progress_str(trial)}")
                    else:
                        actions = c.on_error(trial, error)
                    self._do(actions)
                self._do(c.step())
                if not self.executor.has_in_flight() and not c.is_finished():
                    self._check_stuck()
                self._report()
                if self.state.maybe_write(c.trials, c.search_alg, c.version, self._runner_data()):
                    if self._sync is not None:
                        upload_now = self._new_checkpoint and self.sync_config.sync_on_checkpoint
                        self._new_checkpoint = False
                        self._sync.maybe_sync(force=upload_now)
                for syncer in self._syncers:
                    syncer.maybe_sync()
            self.callbacks.step_end()
            finished = True
        finally:
            self.executor.shutdown()
            self.state.maybe_write(c.trials, c.search_alg, c.version, self._runner_data(), force=True)
            try:
                self.callbacks.call("on_experiment_end")
            finally:
                self._report(done=True)
                if self._sync is not None:
                    # A failed final upload fails a finished run; after another error, that
                    # error is the one raised (the upload failure is logged).
                    self._sync.maybe_sync(force=True, raise_errors=finished)
                for syncer in self._syncers:
                    syncer.close()

    def _runner_data(self) -> dict:
        return {"experiment_dir": self.checkpoint_dir,
                "callback_states": self.callbacks.get_state()}

    def _report(self, done: bool = False) -> None:
        reporter = self.reporter
        if reporter is None:
            return
        trials = self.controller.trials
        if reporter.should_report(trials, done=done):
            reporter.report(trials, done, *self._sys_info())

    def _do(self, actions: list) -> None:
        queue = list(actions)
        while queue:
            action = queue.pop(0)
            follow_ups = self.executor.execute(action, self.controller)
            queue[:0] = follow_ups
            self._callback_for(action)

    def _callback_for(self, action) -> None:
        trial = action.trial
        cbs = self.callbacks
        if isinstance(action, C.StartTrial):
            if trial.status == Trial.RUNNING:
                cbs.call("on_trial_start", trial=trial)
                if action.checkpoint is not None:
                    cbs.call("on_trial_restore", trial=trial)
        elif isinstance(action, C.RestoreTrial):
            cbs.call("on_trial_restore", trial=trial)
        elif isinstance(action, C.SaveTrial):
            saved = trial.checkpoint
            path = None
            if action.storage == TrialCheckpoint.DISK:
                self._new_checkpoint = True
                if saved is not None and isinstance(saved.value, str):
                    path = saved.value if os.path.isdir(saved.value) else os.path.dirname(saved.value)
            self._checkpoint_callbacks(trial, path)
        elif isinstance(action, C.StopTrial):
            if trial.status == Trial.TERMINATED:
                cbs.call("on_trial_complete", trial=trial)
            elif trial.status == Trial.ERROR:
                cbs.call("on_trial_error", trial=trial)
            elif action.error and trial.status == Trial.PENDING:
                cbs.call("on_trial_recover", trial=trial)

    def _checkpoint_callbacks(self, trial: Trial, path: str | None) -> None:
        """A checkpoint was received (Ray 2.x order): `on_checkpoint` for one on disk at
        `path`, then `on_trial_save` (for every save, memory ones included)."""
        cbs = self.callbacks
        if path is not None and cbs.uses("on_checkpoint"):
            from ray.tune.checkpoint import Checkpoint

            cbs.call("on_checkpoint", trial=trial, checkpoint=Checkpoint(path))
        cbs.call("on_trial_save", trial=trial)

    def _on_reported_checkpoint(self, trial: Trial, result: dict) -> tuple[list, str | None]:
        """A function trial's `train.report(..., checkpoint=...)`: now its checkpoint on disk.

        Returns the controller's actions and the checkpoint's path (None: no checkpoint);
        the callbacks hear of it after `on_trial_result`, as in Ray, where the reported
        checkpoint is saved after its result is processed."""
        name = result.get(CHECKPOINT_DIR_NAME)
        if not name:
            return [], None
        path = os.path.join(trial.logdir, name)
        self._new_checkpoint = True
        actions = self.controller.on_checkpoint(trial, TrialCheckpoint(TrialCheckpoint.DISK, path, result))
        return actions, path

    def _check_stuck(self) -> None:
        c = self.controller
        waiting = [t for t in c.trials if t.status in (Trial.PENDING, Trial.PAUSED)]
        if c.running_trials():
            return
        if waiting and c.queue_trials:
            time.sleep(0.1)  # an autoscaler may add resources: keep waiting
            c.resources = _resource_pool(self.executor.cluster_resources())
            return
        if not waiting and not c.search_alg.is_finished():
            time.sleep(0.01)  # the searcher has nothing to suggest until trials finish
            return
        raise TuneError(
            "Tune is stuck: no trial is running and none can start "
            f"({len(waiting)} waiting, resources {c.resources.summary()}); check "
            "resources_per_trial against ray.cluster_resources()"
        )

    def _sys_info(self) -> tuple[str, ...]:
        c = self.controller
        where = self.storage.uri or self.storage.remote_dir if (
            self.storage is not None and self.storage.is_remote) else self.checkpoint_dir
        return (c.scheduler.debug_string(), f"Resources requested: {c.resources.summary()}",
                f"Result logdir: {where}")

    def _status(self) -> str:
        """The status table as text (the web server's and CLI's view)."""
        from ray.tune.progress_reporter import CLIReporter

        reporter = CLIReporter(metric=self.metric, mode=self.mode if self.metric else None)
        return reporter._progress_str(self.controller.trials, False, *self._sys_info())

    # -- client API (called from the server thread through a queue) ---------------
    def submit(self, request) -> None:
        """Called from the server thread; answered by the loop in `_serve_requests`."""
        self._requests.put(request)

    def _serve_requests(self) -> None:
        while True:
            try:
                request = self._requests.get_nowait()
            except queue.Empty:
                return
            request.run(self)
