"""The SearchAlgorithm interface: an event handler that proposes trials.

A search algorithm cannot stop or pause trials (that is the scheduler's job); it is
told about every result and completion and hands out new `Trial`s from `next_trials()`.
"""

from __future__ import annotations

import copy
import os
from typing import Any

from ray.tune import result as R
from ray.tune.error import TuneError
from ray.tune.resources import resources_from_spec
from ray.tune.trial import Trial


class SearchAlgorithm:
    """Base class of search algorithms (see the module docstring)."""

    def add_configurations(self, experiments) -> None:
        raise NotImplementedError

    def next_trials(self) -> list[Trial]:
        """New trials to queue; an empty list means 'nothing right now'."""
        raise NotImplementedError

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        pass

    def on_trial_complete(
        self, trial_id: str, result: dict | None = None, error: bool = False,
        early_terminated: bool = False,
    ) -> None:
        pass

    def on_pause(self, trial_id: str) -> None:
        """The scheduler paused the trial (it gives its resources back until unpaused)."""

    def on_unpause(self, trial_id: str) -> None:
        """A paused trial starts running again."""

    def is_finished(self) -> bool:
        raise NotImplementedError

    def set_finished(self) -> None:
        self._finished = True

    # Experiment checkpointing: by default the whole object is pickled.
    def save_state(self) -> Any:
        return self.__dict__

    def restore_state(self, state: Any) -> None:
        self.__dict__.update(state)


def resolve_metric(metric: str | None, mode: str, reward_attr: str | None) -> tuple[str, str]:
    """`reward_attr` is the Ray 0.7 spelling of `metric` with mode='max'."""
    if reward_attr is not None:
        return reward_attr, "max"
    if mode not in ("min", "max"):
        raise TuneError(f"mode must be 'min' or 'max', got {mode!r}")
    return metric or R.EPISODE_REWARD_MEAN, mode


def create_trial_from_spec(
    spec: dict,
    experiment_name: str,
    *,
    experiment_tag: str = "",
    evaluated_params: dict | None = None,
    trial_id: str | None = None,
) -> Trial:
    """Builds a Trial from a resolved experiment spec (see `Experiment.spec`)."""
    from ray.tune.registry import get_trainable_cls

    config = spec.get("config", {})
    resources = resources_from_spec(spec.get("resources_per_trial"), config)
    if resources is None:
        trainable_cls = get_trainable_cls(spec["run"])
        resources = trainable_cls.default_resource_request(config)
    return Trial(
        spec["run"],
        config=config,
        trial_id=trial_id,
        local_dir=os.path.join(spec["local_dir"], experiment_name or ""),
        experiment_tag=experiment_tag,
        resources=resources,
        stopping_criterion=copy.copy(spec.get("stop") or {}),
        checkpoint_freq=spec.get("checkpoint_freq", 0),
        checkpoint_at_end=spec.get("checkpoint_at_end", False),
        keep_checkpoints_num=spec.get("keep_checkpoints_num"),
        checkpoint_score_attr=spec.get("checkpoint_score_attr") or R.TRAINING_ITERATION,
        export_formats=spec.get("export_formats"),
        restore_path=spec.get("restore"),
        trial_name_creator=spec.get("trial_name_creator"),
        loggers=spec.get("loggers"),
        # `max_failures` not given: Ray 0.7's default of 3 retries for trials that
        # checkpoint; given (FailureConfig, 2.x `tune.run`): retried from scratch too.
        max_failures=3 if spec.get("max_failures") is None else spec["max_failures"],
        restart_without_checkpoint=spec.get("max_failures") is not None,
        evaluated_params=evaluated_params,
        experiment_name=experiment_name,
    )
