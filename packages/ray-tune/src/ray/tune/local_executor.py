"""An in-process executor: runs trainables in the driver, one iteration at a time.

Same interface as `RayTrialExecutor`, no actors: results come back in the order the
iterations were requested, so runs are deterministic. Used for tests, debugging
(breakpoints inside `_train`) and simulations of schedulers.
"""

from __future__ import annotations

import collections
import os
import traceback

from ray.tune import controller as C
from ray.tune.logger import TrialLogdirCreator
from ray.tune.registry import get_trainable_cls
from ray.tune.trainable import Trainable
from ray.tune.trial import Checkpoint, Trial


class LocalTrialExecutor:
    """See the module docstring. `resources` is what `ray.cluster_resources()` would say."""

    def __init__(self, resources: dict | None = None, *, reuse_actors: bool = True):
        self.resources = resources or {"CPU": 2}
        self.reuse_actors = reuse_actors
        self._trainables: dict[str, Trainable] = {}
        self._queue: collections.deque = collections.deque()
        self._cached: dict[tuple, list[Trainable]] = {}
        self.started = 0  # trainable instances created (tests check reuse with it)

    def execute(self, action: C.Action, controller: C.TrialController) -> list[C.Action]:
        trial = action.trial
        try:
            if isinstance(action, C.StartTrial):
                self._start(trial, action.checkpoint)
            elif isinstance(action, C.ContinueTrial):
                self._queue.append(trial)
            elif isinstance(action, C.SaveTrial):
                trainable = self._trainables[trial.trial_id]
                if action.storage == Checkpoint.MEMORY:
                    value = trainable.save_to_object()
                else:
                    value = trainable.save()
                return controller.on_checkpoint(
                    trial, Checkpoint(action.storage, value, dict(trial.last_result))
                )
            elif isinstance(action, C.RestoreTrial):
                trainable = self._trainables[trial.trial_id]
                if not trainable.reset_trial(action.config, trial.logdir, trial.trial_id, str(trial)):
                    trainable.stop()
                    self._start(trial, None)
                    trainable = self._trainables[trial.trial_id]
                _restore(trainable, action.source.checkpoint)
            elif isinstance(action, C.ExportTrial):
                trial.export_paths = self._trainables[trial.trial_id].export_model(
                    list(action.export_formats)
                )
            elif isinstance(action, C.StopTrial):
                trainable = self._trainables.pop(trial.trial_id, None)
                if trainable is not None:
                    key = (trial.trainable_name, trial.resources.key())
                    reusable = type(trainable).reset_config is not Trainable.reset_config
                    if self.reuse_actors and not action.error and reusable:
                        self._cached.setdefault(key, []).append(trainable)
                    else:
                        trainable.stop()
            elif isinstance(action, C.DeleteCheckpoint):
                from ray.tune.ray_executor import _delete_checkpoint

                _delete_checkpoint(action.checkpoint)
        except Exception as exc:  # noqa: BLE001 - the trial's error
            if isinstance(action, C.StopTrial):
                return []
            self._trainables.pop(trial.trial_id, None)
            if trial.status != Trial.RUNNING:
                return []
            return controller.on_error(trial, f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        return []

    def _start(self, trial: Trial, checkpoint: Checkpoint | None) -> None:
        key = (trial.trainable_name, trial.resources.key())
        trainable = None
        if self.reuse_actors and self._cached.get(key):
            trainable = self._cached[key].pop()
            if not trainable.reset_trial(trial.config, trial.logdir, trial.trial_id, str(trial)):
                trainable.stop()
                trainable = None
        if trainable is None:
            os.makedirs(trial.logdir, exist_ok=True)
            cls = get_trainable_cls(trial.trainable_name)
            creator = TrialLogdirCreator(trial.logdir, trial.trial_id, str(trial))
            trainable = cls(trial.config, logger_creator=creator)
            self.started += 1
        self._trainables[trial.trial_id] = trainable
        if checkpoint is not None:
            _restore(trainable, checkpoint)

    def has_in_flight(self) -> bool:
        return bool(self._queue)

    def next_event(self, timeout_s: float | None = None):
        while self._queue:
            trial = self._queue.popleft()
            trainable = self._trainables.get(trial.trial_id)
            if trainable is None:
                continue
            try:
                return trial, trainable.train(), None
            except Exception as exc:  # noqa: BLE001 - the trial's error
                self._trainables.pop(trial.trial_id, None)
                return trial, None, f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"
        return None

    def cluster_resources(self) -> dict:
        return dict(self.resources)

    def shutdown(self) -> None:
        for trainable in list(self._trainables.values()):
            trainable.stop()
        self._trainables.clear()
        for trainables in self._cached.values():
            for trainable in trainables:
                trainable.stop()
        self._cached.clear()
        self._queue.clear()


def _restore(trainable: Trainable, checkpoint: Checkpoint | None) -> None:
    if checkpoint is None:
        return
    if checkpoint.storage == Checkpoint.MEMORY:
        trainable.restore_from_object(checkpoint.value)
    else:
        trainable.restore(checkpoint.value)
