"""Who this process is and what it runs now.

``JobState`` is the job a driver runs or a worker serves (a worker binds to the job
of the first task it runs): the job id, the id generator and the function table.
``TaskContext`` is the task running on this process right now: the executor owns
it and is the only writer; submitters read it (a child task inherits the running
task's placement group; a put's id derives from the running task's id).
"""

from __future__ import annotations

import logging
import os
import sys

from ray._private import ids as ids_mod
from ray._private.gcs import keys
from ray._private.messages import OwnerAddress, PlacementGroupCapture
from ray._private.runtime.function_manager import FunctionManager
from ray.exceptions import RayError

logger = logging.getLogger(__name__)


class JobState:
    def __init__(self, job_id: ids_mod.JobID, gcs, *, load_code_from_local: bool,
                 object_id_seed: int | None = None, namespace: str = "default",
                 detached_actors_by_default: bool = False):
        self._gcs = gcs
        self._load_code_from_local = load_code_from_local
        self.namespace = namespace
        # JobConfig(default_actor_lifetime="detached"): actors created without
        # ``lifetime=`` outlive the job.
        self.detached_actors_by_default = detached_actors_by_default
        # The resolved runtime_env of this job (driver) or of this worker.
        self.runtime_env: dict = {}
        self._set(job_id, object_id_seed)

    def _set(self, job_id: ids_mod.JobID, seed: int | None = None) -> None:
        self.job_id = job_id
        self.binary = job_id.binary()
        self.hex = job_id.hex()
        self.ids = ids_mod.IdGenerator(job_id, seed)
        self.functions = FunctionManager(self._gcs, self.hex, self._load_code_from_local)

    def bind(self, job_hex: str) -> None:
        """A worker serves the job of the first task it runs (its imports and globals)."""
        self._set(ids_mod.JobID.from_hex(job_hex))
        try:  # the driver's script folder, so its sibling modules import here too
            job = self._gcs.hget_obj(keys.JOBS, job_hex) or {}
        except RayError as exc:
            logger.warning("could not read job %s from the GCS (%s): the driver's folder is "
                           "not on this worker's sys.path", job_hex, exc)
            job = {}
        self.namespace = job.get("namespace") or self.namespace  # the driver's
        self.detached_actors_by_default = bool(job.get("detached_actors_by_default"))
        for folder in reversed(job.get("sys_path") or []):
            if folder not in sys.path and os.path.isdir(folder):
                sys.path.insert(0, folder)


class TaskContext:
    """The running task (written only by ``TaskExecutor``).

    ``task_id`` equals ``base_task_id`` between tasks (and always in a driver).
    """

    __slots__ = ("base_task_id", "task_id", "resource_ids", "placement_group", "actor_id",
                 "actor_owner", "actor_class", "task_name", "actor_name", "actor_restarts")

    def __init__(self, base_task_id: bytes):
        self.base_task_id = base_task_id
        self.task_id = base_task_id
        self.resource_ids: dict = {}
        self.placement_group: PlacementGroupCapture | None = None
        self.actor_id: bytes | None = None
        self.actor_owner: OwnerAddress | None = None
        self.actor_class: str | None = None
        self.task_name: str | None = None
        self.actor_name: str | None = None  # the actor's name, if it has one
        self.actor_restarts = 0  # how many times this actor was restarted before

    def running_task(self) -> bool:
        return self.task_id != self.base_task_id


__all__ = ["JobState", "TaskContext"]
