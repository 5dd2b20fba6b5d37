"""The trial controller: a pure state machine (events in, actions out).

The controller owns every `Trial`. The executor (`ray_executor.py`) performs the
actions it returns — start an actor, run one training iteration, save, stop — and
feeds back what happened:

    controller.step()                      -> actions to launch trials that fit
    controller.on_result(trial, result)    -> actions (continue / pause / stop / save)
    controller.on_error(trial, message)    -> actions (restart from checkpoint / give up)
    controller.on_checkpoint(trial, ckpt)  -> actions (delete checkpoints beyond the limit)

Invariant: a RUNNING trial has exactly one training iteration in flight, unless the
actions just returned stop or pause it. No I/O, processes or clocks (the clock is
injected), so every decision is unit-tested directly.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ray.tune import result as R
from ray.tune.error import TuneError
from ray.tune.resources import Resources
from ray.tune.schedulers.trial_scheduler import FIFOScheduler, TrialScheduler
from ray.tune.suggest.search import SearchAlgorithm
from ray.tune.trial import Checkpoint, Trial, TrialView


# -- actions -----------------------------------------------------------------
@dataclass(frozen=True)
class StartTrial:
    """Create (or reuse) the trial's actor, restore `checkpoint` if given."""

    trial: Trial
    checkpoint: Checkpoint | None


@dataclass(frozen=True)
class ContinueTrial:
    """Run one more training iteration."""

    trial: Trial


@dataclass(frozen=True)
class SaveTrial:
    """Checkpoint the trial (`Checkpoint.MEMORY` or `Checkpoint.DISK`); reply with on_checkpoint."""

    trial: Trial
    storage: str


@dataclass(frozen=True)
class RestoreTrial:
    """Reset the running trial's actor to `config`, restore `source`'s latest checkpoint (PBT)."""

    trial: Trial
    source: Trial
    config: dict


@dataclass(frozen=True)
class ExportTrial:
    trial: Trial
    export_formats: tuple


@dataclass(frozen=True)
class StopTrial:
    """Release the trial's actor; `error` actors are never reused."""

    trial: Trial
    error: bool = False


@dataclass(frozen=True)
class DeleteCheckpoint:
    trial: Trial
    checkpoint: Checkpoint


Action = StartTrial | ContinueTrial | SaveTrial | RestoreTrial | ExportTrial | StopTrial | DeleteCheckpoint


@dataclass
class ResourcePool:
    """What the cluster offers, and what running trials hold."""

    cpu: float
    gpu: float = 0
    custom: dict = field(default_factory=dict)
    used_cpu: float = 0
    used_gpu: float = 0
    used_custom: dict = field(default_factory=dict)

    def fits(self, r: Resources) -> bool:
        if self.used_cpu + r.cpu_total() > self.cpu + 1e-9:
            return False
        if self.used_gpu + r.gpu_total() > self.gpu + 1e-9:
            return False
        for key, value in r.custom_total().items():
            if self.used_custom.get(key, 0) + value > self.custom.get(key, 0) + 1e-9:
                return False
        return True

    def could_ever_fit(self, r: Resources) -> bool:
        if r.cpu_total() > self.cpu + 1e-9 or r.gpu_total() > self.gpu + 1e-9:
            return False
        return all(v <= self.custom.get(k, 0) + 1e-9 for k, v in r.custom_total().items())

    def acquire(self, r: Resources) -> None:
        self.used_cpu += r.cpu_total()
        self.used_gpu += r.gpu_total()
        for key, value in r.custom_total().items():
            self.used_custom[key] = self.used_custom.get(key, 0) + value

    def release(self, r: Resources) -> None:
        self.used_cpu -= r.cpu_total()
        self.used_gpu -= r.gpu_total()
        for key, value in r.custom_total().items():
            self.used_custom[key] = self.used_custom.get(key, 0) - value

    def summary(self) -> str:
        return f"{self.used_cpu:g}/{self.cpu:g} CPUs, {self.used_gpu:g}/{self.gpu:g} GPUs"


class TrialController:
    """See the module docstring."""

    def __init__(
        self,
        *,
        search_alg: SearchAlgorithm,
        scheduler: TrialScheduler | None = None,
        resources: ResourcePool,
        clock: Callable[[], float] = time.time,
        queue_trials: bool = False,
    ):
        self.search_alg = search_alg
        self.scheduler = scheduler or FIFOScheduler()
        self.resources = resources
        self.clock = clock
        self.queue_trials = queue_trials
        self.trials: list[Trial] = []
        self._by_id: dict[str, Trial] = {}
        self._stop_requested: set[str] = set()
        self._pending_actions: list[Action] = []
        self._context = _SchedulerContext(self)
        self._unchecked: list[Trial] = []  # added trials not yet checked against the cluster
        self._paused: set[str] = set()  # paused by the scheduler; the searcher was told
        self._clone_waiting: dict[str, list[Trial]] = {}  # source id -> paused trials cloning it
        self.version = 0  # bumped on every status change (the shell persists on change)

    # -- queries ---------------------------------------------------------------
    def get_trial(self, trial_id: str) -> Trial | None:
        return self._by_id.get(trial_id)

    def get_trials(self) -> list[Trial]:
        return list(self.trials)

    def is_finished(self) -> bool:
        return self.search_alg.is_finished() and all(t.is_finished() for t in self.trials)

    def running_trials(self) -> list[Trial]:
        return [t for t in self.trials if t.status == Trial.RUNNING]

    # -- trial set ---------------------------------------------------------------
    def add_trial(self, trial: Trial) -> None:
        """Adds a trial (from the searcher, the client API or a resumed experiment)."""
        if trial.trial_id in self._by_id:
            raise ValueError(f"duplicate trial id {trial.trial_id}")
        self.trials.append(trial)
        self._by_id[trial.trial_id] = trial
        if trial.logdir is None:
            trial.logdir = trial.default_logdir()
        if not trial.is_finished():
            self.scheduler.on_trial_add(self._context, trial.view)
            self._unchecked.append(trial)
        self.version += 1

    def request_stop(self, trial_id: str) -> list[Action]:
        """Stops a trial on request (client API): at once if idle, after its next result if running."""
        trial = self._by_id[trial_id]
        if trial.is_finished():
            return []
        if trial.status == Trial.RUNNING:
            self._stop_requested.add(trial_id)
            return []
        self.scheduler.on_trial_remove(self._context, trial.view)
        self.search_alg.on_trial_complete(trial.trial_id, early_terminated=True)
        self._set_status(trial, Trial.TERMINATED)
        return []

    # -- events ------------------------------------------------------------------
    def step(self) -> list[Action]:
        """Starts as many trials as the resources allow."""
        actions: list[Action] = []
        while True:
            if not any(t.status == Trial.PENDING for t in self.trials):
                self._add_new_trials()
            self._fail_impossible_trials()
            chosen = self.scheduler.choose_trial_to_run(self._context)
            actions += self._drain_requests()
            if chosen is None:
                break
            trial = self._trial_of(chosen)
            if trial.status not in (Trial.PENDING, Trial.PAUSED) or not self.resources.fits(
                trial.resources
            ):
                break
            if any(trial in waiting for waiting in self._clone_waiting.values()):
                break  # its checkpoint is still being saved (by the action just returned)
            actions += self._start(trial)
        return actions

    def on_result(self, trial: Trial, result: dict) -> list[Action]:
        result = dict(result)
        result[R.TRIAL_ID] = trial.trial_id
        try:
            should_stop = self._should_stop(trial, result)
        except KeyError as exc:
            return self.on_error(
                trial,
                f"stopping criterion {exc.args[0]!r} is not in the result (fields: "
                f"{sorted(result)}); fix `stop=` or report that field",
                recoverable=False,
            )
        trial.update_last_result(result, self.clock())
        actions: list[Action] = []
        if should_stop:
            self.scheduler.on_trial_complete(self._context, trial.view, result)
            self.search_alg.on_trial_complete(trial.trial_id, result=result)
            decision = TrialScheduler.STOP
        else:
            decision = self.scheduler.on_trial_result(self._context, trial.view, result)
            self.search_alg.on_trial_result(trial.trial_id, result)
            if decision == TrialScheduler.STOP:
                self.search_alg.on_trial_complete(
                    trial.trial_id, result=result, early_terminated=True
                )
            actions += self._drain_requests()

        if decision == TrialScheduler.STOP:
            if trial.checkpoint_at_end or trial.should_checkpoint():
                actions.append(SaveTrial(trial, Checkpoint.DISK))
            if trial.export_formats:
                actions.append(ExportTrial(trial, tuple(trial.export_formats)))
            actions += self._stop(trial, Trial.TERMINATED)
        elif decision == TrialScheduler.PAUSE:
            self._paused.add(trial.trial_id)
            self.search_alg.on_pause(trial.trial_id)
            if trial.should_checkpoint():
                actions.append(SaveTrial(trial, Checkpoint.DISK))
            if not _saves_current_state(actions, trial):
                actions.append(SaveTrial(trial, Checkpoint.MEMORY))
            actions += self._stop(trial, Trial.PAUSED)
        else:
            if trial.should_checkpoint():
                actions.append(SaveTrial(trial, Checkpoint.DISK))
            actions.append(ContinueTrial(trial))
        return actions

    def on_error(self, trial: Trial, message: str, recoverable: bool = True) -> list[Action]:
        """The trial's actor died or its code raised: retry from the checkpoint or give up."""
        trial.num_failures += 1
        trial.error_msg = message
        was_running = trial.status == Trial.RUNNING
        actions: list[Action] = [StopTrial(trial, error=True)]
        if was_running:
            self.resources.release(trial.resources)
        if recoverable and trial.should_recover():
            self._set_status(trial, Trial.PENDING)
            return actions
        self.scheduler.on_trial_error(self._context, trial.view)
        self.search_alg.on_trial_complete(trial.trial_id, error=True)
        self._set_status(trial, Trial.ERROR)
        return actions

    def on_checkpoint(self, trial: Trial, checkpoint: Checkpoint) -> list[Action]:
        """Records a saved checkpoint; returns deletions beyond `keep_checkpoints_num`."""
        trial.checkpoint = checkpoint
        for target in self._clone_waiting.pop(trial.trial_id, []):
            target.checkpoint = checkpoint  # synchronous PBT: a paused trial clones this one
        if checkpoint.storage != Checkpoint.DISK:
            return []
        if trial.disk_checkpoints and trial.disk_checkpoints[-1].value == checkpoint.value:
            trial.disk_checkpoints[-1] = checkpoint  # the same directory saved again
            return []
        trial.disk_checkpoints.append(checkpoint)
        self.version += 1
        keep = trial.keep_checkpoints_num
        if keep is None or len(trial.disk_checkpoints) <= keep:
            return []
        attr = trial.checkpoint_score_attr
        sign = 1.0
        if attr.startswith("min-"):
            attr, sign = attr[4:], -1.0
        # The newest checkpoint is always kept (it is what a restart restores).
        older = trial.disk_checkpoints[:-1]
        older.sort(key=lambda c: sign * (c.result or {}).get(attr, float("-inf")))
        doomed = older[: len(trial.disk_checkpoints) - keep]
        trial.disk_checkpoints = [c for c in trial.disk_checkpoints if c not in doomed]
        return [DeleteCheckpoint(trial, c) for c in doomed]

    # -- internals ---------------------------------------------------------------
    def _add_new_trials(self) -> None:
        for trial in self.search_alg.next_trials():
            self.add_trial(trial)

    def _fail_impossible_trials(self) -> None:
        unchecked, self._unchecked = self._unchecked, []
        if self.queue_trials:
            return  # an autoscaler may add the resources later
        for trial in unchecked:
            if trial.status == Trial.PENDING and not self.resources.could_ever_fit(trial.resources):
                trial.error_msg = (
                    f"insufficient cluster resources to launch trial {trial}: it needs "
                    f"{trial.resources.summary_string()} but the cluster has "
                    f"{self.resources.cpu:g} CPUs, {self.resources.gpu:g} GPUs "
                    f"{self.resources.custom or ''}; lower resources_per_trial or pass "
                    "queue_trials=True on an autoscaling cluster"
                )
                self.scheduler.on_trial_error(self._context, trial.view)
                self.search_alg.on_trial_complete(trial.trial_id, error=True)
                self._set_status(trial, Trial.ERROR)

    def _start(self, trial: Trial) -> list[Action]:
        if trial.trial_id in self._paused:
            self._paused.discard(trial.trial_id)
            self.search_alg.on_unpause(trial.trial_id)
        self.resources.acquire(trial.resources)
        if trial.start_time is None:
            trial.start_time = self.clock()
        self._set_status(trial, Trial.RUNNING)
        return [StartTrial(trial, trial.checkpoint), ContinueTrial(trial)]

    def _stop(self, trial: Trial, status: str) -> list[Action]:
        self.resources.release(trial.resources)
        self._stop_requested.discard(trial.trial_id)
        self._set_status(trial, status)
        return [StopTrial(trial)]

    def _should_stop(self, trial: Trial, result: dict) -> bool:
        if result.get(R.DONE) or trial.trial_id in self._stop_requested:
            return True
        criterion = trial.stopping_criterion
        if callable(criterion):
            return bool(criterion(trial.trial_id, result))
        for key, threshold in criterion.items():
            if key not in result:
                raise KeyError(key)
            if result[key] >= threshold:
                return True
        return False

    def _set_status(self, trial: Trial, status: str) -> None:
        trial.status = status
        self.version += 1

    def _trial_of(self, trial_or_view) -> Trial:
        if isinstance(trial_or_view, TrialView):
            return trial_or_view._trial
        return trial_or_view

    def _drain_requests(self) -> list[Action]:
        actions, self._pending_actions = self._pending_actions, []
        return actions

    # -- requests from schedulers (through _SchedulerContext) ---------------------
    def _request_stop_paused(self, trial: Trial) -> None:
        if trial.status in (Trial.PAUSED, Trial.PENDING):
            self.search_alg.on_trial_complete(trial.trial_id, early_terminated=True)
            self._set_status(trial, Trial.TERMINATED)
        elif trial.status == Trial.RUNNING:
            self._stop_requested.add(trial.trial_id)

    def _request_unpause(self, trial: Trial) -> None:
        if trial.status == Trial.PAUSED:
            self._set_status(trial, Trial.PENDING)

    def _request_checkpoint(self, trial: Trial) -> None:
        if trial.status == Trial.RUNNING:
            self._pending_actions.append(SaveTrial(trial, Checkpoint.MEMORY))

    def _request_exploit(self, trial: Trial, source: Trial, config: dict, tag: str) -> bool:
        """PBT: `trial` continues from `source`'s latest checkpoint with `config`.

        A running trial is restored in place (RestoreTrial). A paused one (synchronous
        PBT) takes the checkpoint as the one it starts from; if `source`'s checkpoint is
        still being saved, the trial waits for it (see `on_checkpoint`)."""
        checkpoint = source.checkpoint
        pending_save = any(
            isinstance(a, SaveTrial) and a.trial is source for a in self._pending_actions
        )
        if checkpoint is None and not pending_save:
            return False
        if trial.status == Trial.RUNNING:
            self._pending_actions.append(RestoreTrial(trial, source, config))
        elif trial.status == Trial.PAUSED:
            if pending_save:
                self._clone_waiting.setdefault(source.trial_id, []).append(trial)
            else:
                trial.checkpoint = checkpoint
        else:
            return False
        trial.config = config
        trial.experiment_tag = tag
        self.version += 1
        return True

    def _request_config(self, trial: Trial, config: dict) -> None:
        if trial.status not in (Trial.PENDING, Trial.PAUSED):
            raise TuneError(f"the config of {trial} can change only before it runs ({trial.status})")
        trial.config = config
        self.version += 1


def _saves_current_state(actions: list[Action], trial: Trial) -> bool:
    """Whether `actions` already end, for `trial`, with a save of its state in memory
    (a scheduler asked for one): pausing then needs no second save."""
    for action in reversed(actions):
        if action.trial is not trial:
            continue
        if isinstance(action, SaveTrial):
            if action.storage == Checkpoint.MEMORY:
                return True
            continue
        return False
    return False


class _SchedulerContext:
    """The `trial_runner` schedulers see: read-only trial views plus requests."""

    def __init__(self, controller: TrialController):
        self._controller = controller
        self._views: list[TrialView] = []

    def get_trials(self) -> list[TrialView]:
        trials = self._controller.trials
        if len(self._views) != len(trials):  # trials are only ever appended
            self._views = [t.view for t in trials]
        return list(self._views)

    def has_resources(self, resources: Resources) -> bool:
        return self._controller.resources.fits(resources)

    def stop_trial(self, trial) -> None:
        self._controller._request_stop_paused(self._controller._trial_of(trial))

    def unpause_trial(self, trial) -> None:
        self._controller._request_unpause(self._controller._trial_of(trial))

    def checkpoint_trial(self, trial) -> None:
        self._controller._request_checkpoint(self._controller._trial_of(trial))

    def set_config(self, trial, config: dict) -> None:
        """Replaces the config of a trial that has not run yet (PB2 fills missing values)."""
        self._controller._request_config(self._controller._trial_of(trial), config)

    def exploit_trial(self, trial, source, new_config: dict, new_tag: str) -> bool:
        c = self._controller
        return c._request_exploit(c._trial_of(trial), c._trial_of(source), new_config, new_tag)
