"""``ray.get_runtime_context()``: who and where the current code runs."""

from __future__ import annotations

from ray._private import runtime as _runtime


class RuntimeContext:
    def __init__(self, rt):
        self._rt = rt

    def get_node_id(self) -> str:
        return self._rt.node["node_id"] if hasattr(self._rt, "node") else "local"

    def get_job_id(self) -> str:
        return self._rt.job_id.hex()

    def get_task_id(self) -> str | None:
        task = getattr(self._rt, "current_task_id", None)
        base = getattr(self._rt, "base_task_id", None)
        return None if task is None or task == base else task.hex()

    def get_actor_id(self) -> str | None:
        actor = getattr(self._rt, "actor_id", None)
        return None if actor is None else actor.hex()

    def get_worker_id(self) -> str:
        return self._rt.worker_id.hex()

    @property
    def namespace(self) -> str:
        return self._rt.namespace

    @property
    def runtime_env(self):
        """Ray 2.x: the runtime environment this code runs in, as a
        ``ray.runtime_env.RuntimeEnv`` (empty when none): in a driver the job's
        (``ray.init(runtime_env=...)``), in a task or actor the effective one (its own
        laid over its parent's). Local paths appear as the uploaded package URIs
        (``gcs://_ray_pkg_<sha1>.zip``); passing it on to ``.options(runtime_env=...)``
        reuses them."""
        from ray.runtime_env import RuntimeEnv

        return RuntimeEnv(_validate=False, **(getattr(self._rt, "runtime_env", None) or {}))

    @property
    def node_id(self):
        return self.get_node_id()

    @property
    def job_id(self):
        return self.get_job_id()

    def get_resource_ids(self) -> dict:
        return self._rt.resource_ids_now()

    def get_assigned_resources(self) -> dict:
        return {k: sum(f for _, f in v) for k, v in self._rt.resource_ids_now().items()}


def get_runtime_context() -> RuntimeContext:
    return RuntimeContext(_runtime.current())
