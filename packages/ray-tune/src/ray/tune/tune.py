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
from ray.tune.logger import UnifiedLogger
from ray.tune.progress_reporter import ProgressReporter, status_string
from ray.tune.ray_executor import RayTrialExecutor
from ray.tune.schedulers import FIFOScheduler
from ray.tune.suggest.basic_variant import BasicVariantGenerator
from ray.tune.suggest.suggestion import SuggestionAlgorithm
from ray.tune.syncer import Syncer
from ray.tune.trial import Checkpoint as TrialCheckpoint
from ray.tune.trial import Trial

logger = logging.getLogger(__name__)

_RUN_ONLY_KWARGS = ("metric", "mode", "storage_path", "max_concurrent_trials", "sync_to_cloud",
                    "sync_to_driver", "callbacks")


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
        from ray.tune.analysis import ExperimentAnalysis

        return ExperimentAnalysis(self._dirs[0], trials=self.trials)

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
    max_failures: int = 3,
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
    """Executes training; returns the list of Trials (with ExperimentAnalysis helpers)."""
    for key in kwargs:
        if key not in _RUN_ONLY_KWARGS:
            known = list(run.__code__.co_varnames[: run.__code__.co_argcount]) + list(_RUN_ONLY_KWARGS)
            close = difflib.get_close_matches(key, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TuneError(f"tune.run() got an unexpected argument {key!r}{hint}")
    local_dir = kwargs.get("storage_path") or local_dir
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
):
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
    if max_concurrent_trials is not None and isinstance(search_alg, SuggestionAlgorithm):
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
    resumed = _maybe_resume(resume, checkpoint_dir, controller, search_alg, experiments)
    if not resumed:
        search_alg.add_configurations(experiments)

    shell = _Shell(
        controller, executor, experiments, verbose=verbose, metric=metric, mode=mode,
        checkpoint_dir=checkpoint_dir, callbacks=callbacks,
    )
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


def _maybe_resume(resume, checkpoint_dir, controller, search_alg, experiments) -> bool:
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
    trials = [Trial.from_json(t) for t in data["checkpoints"]]
    for trial in trials:
        _resume_status(trial, resume if isinstance(resume, str) else "")
        controller.add_trial(trial)
    searcher_state = ES.load_searcher_state(data)
    if searcher_state is not None:
        search_alg.restore_state(searcher_state)
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
    """Runs the controller with the executor, loggers, progress table and state file."""

    def __init__(
        self, controller, executor, experiments, *, verbose, metric, mode, checkpoint_dir,
        callbacks=None,
    ):
        self.controller = controller
        self.executor = executor
        self.experiments = experiments
        self.verbose = verbose
        self.metric = metric
        self.mode = mode or "max"
        self.checkpoint_dir = checkpoint_dir
        self.callbacks = CallbackList(callbacks, controller.get_trials)
        self.reporter = ProgressReporter(verbose)
        self.state = ES.ExperimentStateWriter(checkpoint_dir)
        self._loggers: dict[str, UnifiedLogger] = {}
        self._requests: queue.Queue = queue.Queue()
        self._syncers = [
            Syncer(e.checkpoint_dir, os.path.join(e.spec["upload_dir"], e.name), e.spec["sync_function"])
            for e in experiments
            if e.spec.get("upload_dir")
        ]

    # -- the loop ----------------------------------------------------------------
    def run(self, server=None) -> None:
        c = self.controller
        self.callbacks.call("setup", num_samples=sum(e.spec["num_samples"] for e in self.experiments))
        try:
            self._do(c.step())
            while not c.is_finished():
                if server is not None:
                    self._serve_requests()
                event = self.executor.next_event(timeout_s=0.1 if server is not None else 5.0)
                if event is not None:
                    trial, result, error = event
                    if error is None:
                        self._log_result(trial, result)
                        actions = self._on_reported_checkpoint(trial, result)
                        actions += c.on_result(trial, result)
                        self.reporter.on_result(trial, result)
                        self.callbacks.call("on_trial_result", trial=trial, result=result)
                    else:
                        actions = c.on_error(trial, error)
                    self._do(actions)
                self._do(c.step())
                if not self.executor.has_in_flight() and not c.is_finished():
                    self._check_stuck()
                self.reporter.report(time.monotonic(), self._status)
                self.state.maybe_write(c.trials, c.search_alg, c.version)
                for syncer in self._syncers:
                    syncer.maybe_sync()
        finally:
            self.executor.shutdown()
            for each in self._loggers.values():
                each.close()
            self._loggers.clear()
            self.state.maybe_write(c.trials, c.search_alg, c.version, force=True)
            self.reporter.report(time.monotonic(), self._status, force=True)
            for syncer in self._syncers:
                syncer.close()
        self.callbacks.call("on_experiment_end")

    def _do(self, actions: list) -> None:
        queue = list(actions)
        while queue:
            action = queue.pop(0)
            if isinstance(action, C.StartTrial):
                self._ensure_logger(action.trial)
            elif isinstance(action, C.RestoreTrial):
                self._ensure_logger(action.trial).update_config(action.config)
            follow_ups = self.executor.execute(action, self.controller)
            queue[:0] = follow_ups
            if self.callbacks:
                self._callback_for(action)
            if isinstance(action, C.StopTrial) and action.trial.is_finished():
                log = self._loggers.pop(action.trial.trial_id, None)
                if log is not None:
                    log.close()

    def _callback_for(self, action) -> None:
        trial = action.trial
        if isinstance(action, C.StartTrial) and trial.status == Trial.RUNNING:
            self.callbacks.call("on_trial_start", trial=trial)
        elif isinstance(action, C.StopTrial) and trial.status == Trial.TERMINATED:
            self.callbacks.call("on_trial_complete", trial=trial)
        elif isinstance(action, C.StopTrial) and trial.status == Trial.ERROR:
            self.callbacks.call("on_trial_error", trial=trial)

    def _on_reported_checkpoint(self, trial: Trial, result: dict) -> list:
        """A function trial's `train.report(..., checkpoint=...)`: now its checkpoint on disk."""
        name = result.get(CHECKPOINT_DIR_NAME)
        if not name:
            return []
        path = os.path.join(trial.logdir, name)
        if self.callbacks:
            from ray.tune.checkpoint import Checkpoint

            self.callbacks.call("on_checkpoint", trial=trial, checkpoint=Checkpoint(path))
        return self.controller.on_checkpoint(trial, TrialCheckpoint(TrialCheckpoint.DISK, path, result))

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

    def _ensure_logger(self, trial: Trial) -> UnifiedLogger:
        log = self._loggers.get(trial.trial_id)
        if log is None:
            log = UnifiedLogger(trial.config, trial.logdir, loggers=trial.loggers)
            self._loggers[trial.trial_id] = log
        return log

    def _log_result(self, trial: Trial, result: dict) -> None:
        result["trial_id"] = trial.trial_id
        self._ensure_logger(trial).on_result(result)

    def _status(self) -> str:
        c = self.controller
        return status_string(
            c.trials,
            scheduler_debug=c.scheduler.debug_string(),
            resources_summary=c.resources.summary(),
            logdir=self.checkpoint_dir,
            best_metric=self.metric,
            mode=self.mode,
        )

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
