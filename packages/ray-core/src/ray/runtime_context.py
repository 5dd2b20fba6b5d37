"""``ray.get_runtime_context()``: who and where the current code runs (Ray 2.x's
``RuntimeContext``; the deprecated properties and ``get()`` are kept for older code)."""

from __future__ import annotations

import warnings
from typing import Any

from ray._private import runtime as _runtime
from ray._private.runtime.interface import Runtime

# Resources whose instances have ids a task can be told about (CUDA_VISIBLE_DEVICES).
_ACCELERATORS = ("GPU",)


class RuntimeContext:
    def __init__(self, rt: Runtime):
        self._rt = rt

    def get(self) -> dict[str, Any]:
        """Deprecated (use the ``get_*_id()`` methods): a dict of ``job_id``, ``node_id``,
        ``namespace`` and, inside a task or actor, ``task_id`` / ``actor_id``."""
        warnings.warn("RuntimeContext.get() is deprecated: use get_job_id(), get_node_id(), "
                      "get_task_id() and get_actor_id() instead.", DeprecationWarning,
                      stacklevel=2)
        who = self._rt.identity()
        context: dict[str, Any] = {"job_id": who.job_id, "node_id": who.node_id,
                                   "namespace": who.namespace}
        if who.task_id is not None:
            context["task_id"] = who.task_id
        if who.actor_id is not None:
            context["actor_id"] = who.actor_id
        return context

    def get_node_id(self) -> str:
        return self._rt.identity().node_id

    def get_job_id(self) -> str:
        return self._rt.identity().job_id

    def get_task_id(self) -> str | None:
        return self._rt.identity().task_id

    def get_task_name(self) -> str | None:
        """The running task's name: its function's (or ``.options(name=)``), for an actor
        call ``Class.method``; None outside a task."""
        return self._rt.identity().task_name

    def get_task_function_name(self) -> str | None:
        return self._rt.identity().task_name

    def get_actor_id(self) -> str | None:
        return self._rt.identity().actor_id

    def get_actor_name(self) -> str | None:
        """The name this actor was created with (``.options(name=)``); None if it has
        none or this is not an actor."""
        return self._rt.identity().actor_name

    def get_worker_id(self) -> str:
        return self._rt.identity().worker_id

    def get_placement_group_id(self) -> str | None:
        return self._rt.identity().placement_group_id

    @property
    def current_placement_group_id(self) -> str | None:
        return self.get_placement_group_id()

    @property
    def should_capture_child_tasks_in_placement_group(self) -> bool:
        return self._rt.identity().capture_child_tasks

    @property
    def was_current_actor_reconstructed(self) -> bool:
        """Whether this actor runs after a restart (``max_restarts``)."""
        who = self._rt.identity()
        if who.actor_id is None:
            raise AssertionError("was_current_actor_reconstructed may only be read inside an "
                                 "actor.")
        return who.actor_restarts != 0

    @property
    def current_actor(self):
        """A handle to the actor this code runs in (it does not keep the actor alive)."""
        from ray.actor import ActorHandle

        who = self._rt.identity()
        if who.actor_id is None:
            raise RuntimeError("current_actor is only available inside an actor's methods "
                               "(this code is not running in an actor).")
        info = self._rt.actor_info(bytes.fromhex(who.actor_id))
        return ActorHandle(info.actor_id, info.class_name, info.methods)

    @property
    def gcs_address(self) -> str | None:
        return self._rt.identity().gcs_address

    @property
    def namespace(self) -> str:
        return self._rt.identity().namespace

    @property
    def runtime_env(self):
        """Ray 2.x: the runtime environment this code runs in, as a
        ``ray.runtime_env.RuntimeEnv`` (empty when none): in a driver the job's
        (``ray.init(runtime_env=...)``), in a task or actor the effective one (its own
        laid over its parent's). Local paths appear as the uploaded package URIs
        (``gcs://_ray_pkg_<sha1>.zip``); passing it on to ``.options(runtime_env=...)``
        reuses them."""
        from ray.runtime_env import RuntimeEnv

        return RuntimeEnv(_validate=False, **(self._rt.runtime_env or {}))

    @property
    def node_id(self):
        return self.get_node_id()

    @property
    def job_id(self):
        return self.get_job_id()

    @property
    def task_id(self):
        return self.get_task_id()

    @property
    def actor_id(self):
        return self.get_actor_id()

    def get_accelerator_ids(self) -> dict[str, list[str]]:
        """The accelerator instances the running task or actor holds, as Ray reports them:
        ``{"GPU": ["0", "1"]}`` (ids as strings; empty lists where none)."""
        held = self._rt.resource_ids_now()
        return {name: [str(i) for i, _ in held.get(name, ())] for name in _ACCELERATORS}

    def get_resource_ids(self) -> dict[str, list[str]]:
        """Deprecated name of ``get_accelerator_ids()`` (as in Ray 2.x)."""
        return self.get_accelerator_ids()

    def get_assigned_resources(self) -> dict:
        """What the running task or actor holds: resource name -> amount (an actor with
        the default options holds no CPU)."""
        return {k: sum(f for _, f in v) for k, v in self._rt.resource_ids_now().items()}


def get_runtime_context() -> RuntimeContext:
    return RuntimeContext(_runtime.current())
