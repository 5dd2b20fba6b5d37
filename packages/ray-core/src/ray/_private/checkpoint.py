"""The 0.7 ``Checkpointable`` actor interface (re-exported by ``ray.actor``).

It lives below the runtime, which calls it when an actor starts and after its calls.
"""

from __future__ import annotations

import abc
import collections

Checkpoint = collections.namedtuple("Checkpoint", ["checkpoint_id", "timestamp"])
CheckpointContext = collections.namedtuple(
    "CheckpointContext",
    ["actor_id", "num_tasks_since_last_checkpoint", "time_elapsed_ms_since_last_checkpoint"],
)


class Checkpointable(abc.ABC):
    """An actor that saves its state so a restart (max_reconstructions) resumes from it."""

    @abc.abstractmethod
    def should_checkpoint(self, checkpoint_context: CheckpointContext) -> bool:
        """Whether to save a checkpoint now (called after each method call)."""

    @abc.abstractmethod
    def save_checkpoint(self, actor_id, checkpoint_id) -> None:
        """Save the actor's state under ``checkpoint_id`` (e.g. to a file)."""

    @abc.abstractmethod
    def load_checkpoint(self, actor_id, available_checkpoints: list[Checkpoint]):
        """Restore from one of ``available_checkpoints`` (newest first); return its id,
        or None to start fresh."""

    @abc.abstractmethod
    def checkpoint_expired(self, actor_id, checkpoint_id) -> None:
        """A checkpoint is no longer needed and may be deleted."""
