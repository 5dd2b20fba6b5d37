"""The executor: carries out the controller's actions with Ray actors.

Each running trial is one actor (`ray.remote(Trainable)` with the trial's resources)
with exactly one `train.remote()` in flight (function trials: `train_batch.remote()`,
which returns every result the function has ready); `next_event()` waits for the first
of those to finish. Finished trials' actors are kept for reuse when the trainable can
`reset_config` (function trainables always can), which saves an actor start per trial.
"""

from __future__ import annotations

import collections
import logging
import os
import shutil
import traceback
from typing import Any

import ray
from ray.tune import controller as C
from ray.tune.error import TuneError
from ray.tune.function_runner import FunctionRunner
from ray.tune.logger import TrialLogdirCreator
from ray.tune.registry import get_trainable_cls
from ray.tune.trainable import Trainable
from ray.tune.trial import Checkpoint, Trial

logger = logging.getLogger(__name__)


_actor_classes: dict[type, Any] = {}


def _remote_class(cls: type) -> Any:
    """`ray.remote` of a subclass that hides GPUs from trials that asked for none."""
    remote_cls = _actor_classes.get(cls)
    if remote_cls is None:

        def __init__(self, config, logger_creator=None, hide_gpus=True):  # noqa: N807
            if hide_gpus:
                os.environ["CUDA_VISIBLE_DEVICES"] = ""
            cls.__init__(self, config, logger_creator=logger_creator)

        actor_cls = type(cls.__name__, (cls,), {"__init__": __init__, "__module__": __name__})
        remote_cls = ray.remote(actor_cls)
        _actor_classes[cls] = remote_cls
    return remote_cls


def _can_reset(cls: type) -> bool:
    return cls.reset_config is not Trainable.reset_config


def _reuses_only_to_restore(cls: type) -> bool:
    """A class written against the 0.7 API (`_train`, no `step`) is reused as in Ray 0.7:
    only by a trial that restores a checkpoint (a paused trial resuming). Ray 0.7 started
    every fresh trial in a fresh actor, so a 0.7 `reset_config` may keep per-run state
    that only a restore overwrites. Ray 2.x classes (`step`) and functions are reused
    for any trial."""
    if issubclass(cls, FunctionRunner):
        return False
    defines = [vars(klass) for klass in cls.__mro__ if klass is not Trainable]
    return any("_train" in d for d in defines) and not any("step" in d for d in defines)


class RayTrialExecutor:
    """See the module docstring."""

    def __init__(self, *, reuse_actors: bool = True):
        self.reuse_actors = reuse_actors
        self._actors: dict[str, Any] = {}  # trial_id -> actor
        self._in_flight: dict[Any, Trial] = {}  # train ObjectRef -> trial
        self._cached: dict[tuple, list[Any]] = {}  # (trainable, resources) -> idle actors
        self._groups: dict[int, Any] = {}  # id(actor) -> its trial's placement group
        # Function trials return their results in batches (`train_batch`): the rest of a
        # batch waits here and is handed out one result per ContinueTrial.
        self._buffered: dict[str, collections.deque] = {}
        self._ready: collections.deque = collections.deque()

    # -- actions ---------------------------------------------------------------
    def execute(self, action: C.Action, controller: C.TrialController) -> list[C.Action]:
        """Performs one action; returns the follow-up actions the controller asked for."""
        try:
            return self._execute(action, controller)
        except Exception as exc:  # noqa: BLE001 - any failure of a trial's actor is the trial's error
            trial = action.trial
            if isinstance(action, C.StopTrial):
                logger.warning("error stopping trial %s: %s", trial, exc)
                return []
            message = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"
            self._drop(trial)
            if trial.status != Trial.RUNNING:
                return []
            return controller.on_error(trial, message)

    def _execute(self, action: C.Action, controller: C.TrialController) -> list[C.Action]:
        trial = action.trial
        if isinstance(action, C.StartTrial):
            self._start(trial, action.checkpoint)
        elif isinstance(action, C.ContinueTrial):
            if self._buffered.get(trial.trial_id):
                self._ready.append(trial)
            else:
                actor = self._actors[trial.trial_id]
                batch = issubclass(get_trainable_cls(trial.trainable_name), FunctionRunner)
                ref = actor.train_batch.remote() if batch else actor.train.remote()
                self._in_flight[ref] = trial
        elif isinstance(action, C.SaveTrial):
            actor = self._actors[trial.trial_id]
            if action.storage == Checkpoint.MEMORY:
                value = actor.save_to_object.remote()
            else:
                value = ray.get(actor.save.remote())
            return controller.on_checkpoint(
                trial, Checkpoint(action.storage, value, dict(trial.last_result))
            )
        elif isinstance(action, C.RestoreTrial):
            self._restore_from(trial, action.source, action.config)
        elif isinstance(action, C.ExportTrial):
            actor = self._actors[trial.trial_id]
            trial.export_paths = ray.get(actor.export_model.remote(list(action.export_formats)))
        elif isinstance(action, C.StopTrial):
            self._stop(trial, action.error)
        elif isinstance(action, C.DeleteCheckpoint):
            _delete_checkpoint(action.checkpoint)
        else:
            raise TypeError(f"unknown action {action!r}")
        return []

    def _start(self, trial: Trial, checkpoint: Checkpoint | None) -> None:
        cls = get_trainable_cls(trial.trainable_name)
        key = (trial.trainable_name, trial.resources.key())
        actor = None
        if self._cached.get(key) and checkpoint is None and _reuses_only_to_restore(cls):
            # Not reusable for a fresh trial: idle actors would only hold its resources.
            for idle in self._cached.pop(key):
                self._terminate(idle, error=False)
        if self.reuse_actors and self._cached.get(key):
            actor = self._cached[key].pop()
            reset = actor.reset_trial.remote(trial.config, trial.logdir, trial.trial_id, str(trial))
            # Function trainables always reset: no need to wait for the answer (the
            # actor runs calls in order). Other classes may refuse: an error of the
            # trial, as in Ray (0.7 and 2.x).
            if not issubclass(cls, FunctionRunner) and not ray.get(reset):
                self._terminate(actor, error=True)
                raise TuneError(
                    f"{cls.__name__}.reset_config() returned False: reusing actors "
                    "(reuse_actors=True) needs reset_config() to apply the new config and "
                    "return True; implement it or pass reuse_actors=False"
                )
        if actor is None:
            os.makedirs(trial.logdir, exist_ok=True)
            r = trial.resources
            options: dict[str, Any] = {"num_cpus": r.cpu, "num_gpus": r.gpu}
            if r.custom_resources:
                options["resources"] = dict(r.custom_resources)
            pg = None
            if r.bundles:  # PlacementGroupFactory: the actor in bundle 0, its children in the rest
                from ray.util.placement_group import placement_group
                from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

                pg = placement_group(list(r.bundles), strategy=r.strategy)
                options["scheduling_strategy"] = PlacementGroupSchedulingStrategy(
                    pg, 0, placement_group_capture_child_tasks=True)
            actor = _remote_class(cls).options(**options).remote(
                trial.config,
                logger_creator=TrialLogdirCreator(trial.logdir, trial.trial_id, str(trial)),
                hide_gpus=r.gpu == 0,
            )
            if pg is not None:
                self._groups[id(actor)] = pg
        self._actors[trial.trial_id] = actor
        if checkpoint is not None:
            if checkpoint.storage == Checkpoint.MEMORY:
                actor.restore_from_object.remote(checkpoint.value)
            else:
                actor.restore.remote(checkpoint.value)

    def _restore_from(self, trial: Trial, source: Trial, config: dict) -> None:
        actor = self._actors[trial.trial_id]
        checkpoint = source.checkpoint
        if checkpoint is None:
            return
        if not ray.get(actor.reset_trial.remote(config, trial.logdir, trial.trial_id, str(trial))):
            # The trainable cannot reset in place: replace its actor.
            self._drop(trial)
            self._start(trial, None)
            actor = self._actors[trial.trial_id]
        if checkpoint.storage == Checkpoint.MEMORY:
            actor.restore_from_object.remote(checkpoint.value)
        else:
            actor.restore.remote(checkpoint.value)

    def _forget_buffered(self, trial: Trial) -> None:
        self._buffered.pop(trial.trial_id, None)
        if trial in self._ready:
            self._ready.remove(trial)

    def _stop(self, trial: Trial, error: bool) -> None:
        self._forget_buffered(trial)
        actor = self._actors.pop(trial.trial_id, None)
        if actor is None:
            return
        cls = get_trainable_cls(trial.trainable_name)
        if self.reuse_actors and not error and _can_reset(cls):
            self._cached.setdefault((trial.trainable_name, trial.resources.key()), []).append(actor)
            return
        self._terminate(actor, error)

    def _drop(self, trial: Trial) -> None:
        self._forget_buffered(trial)
        actor = self._actors.pop(trial.trial_id, None)
        for ref, t in list(self._in_flight.items()):
            if t is trial:
                del self._in_flight[ref]
        if actor is not None:
            self._terminate(actor, error=True)

    def _terminate(self, actor: Any, error: bool) -> None:
        if not error:
            try:
                ray.get(actor.stop.remote())
            except Exception:  # noqa: BLE001 - a dying actor is killed below anyway
                pass
        try:
            ray.kill(actor)
        except Exception:  # noqa: BLE001
            pass
        pg = self._groups.pop(id(actor), None)
        if pg is not None:
            from ray.util.placement_group import remove_placement_group

            try:
                remove_placement_group(pg)
            except Exception:  # noqa: BLE001 - the cluster is going away
                pass

    # -- events ----------------------------------------------------------------
    def has_in_flight(self) -> bool:
        return bool(self._in_flight or self._ready)

    def next_event(self, timeout_s: float | None = None) -> tuple[Trial, dict | None, str | None] | None:
        """Waits for one training iteration: (trial, result, None) or (trial, None, error)."""
        if self._ready:
            trial = self._ready.popleft()
            return trial, self._buffered[trial.trial_id].popleft(), None
        if not self._in_flight:
            return None
        ready, _ = ray.wait(list(self._in_flight), num_returns=1, timeout=timeout_s)
        if not ready:
            return None
        ref = ready[0]
        trial = self._in_flight.pop(ref)
        try:
            value = ray.get(ref)
        except Exception as exc:  # noqa: BLE001 - reported as the trial's error
            return trial, None, f"{type(exc).__name__}: {exc}"
        if isinstance(value, list):  # a batch from train_batch()
            self._buffered[trial.trial_id] = collections.deque(value[1:])
            value = value[0]
        return trial, value, None

    def cluster_resources(self) -> dict:
        return ray.cluster_resources()

    def shutdown(self) -> None:
        """Stops every actor this executor started (running and cached)."""
        self._in_flight.clear()
        self._buffered.clear()
        self._ready.clear()
        for actor in list(self._actors.values()):
            self._terminate(actor, error=True)
        self._actors.clear()
        for actors in self._cached.values():
            for actor in actors:
                self._terminate(actor, error=False)
        self._cached.clear()


def _delete_checkpoint(checkpoint: Checkpoint) -> None:
    path = checkpoint.value
    if not isinstance(path, str):
        return
    directory = path if os.path.isdir(path) else os.path.dirname(path)
    if os.path.basename(directory).startswith("checkpoint_"):
        shutil.rmtree(directory, ignore_errors=True)
