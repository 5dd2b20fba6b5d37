"""The runtime interface: what ``import ray``'s public API asks of the process runtime.

Two implementations: the cluster runtime (``core_worker.CoreWorker``) and the serial
``local_mode.LocalRuntime``. Callers never ask which one runs: a capability only the
cluster has (the GCS, placement groups, the timeline) is a method here that local mode
implements by raising ``LocalModeUnsupported``, which names what to use instead.
``tests/test_core_runtime_interface.py`` checks both implement every method.
"""

from __future__ import annotations

import abc
import concurrent.futures
import contextlib
import dataclasses
from typing import Any

from ray._private.messages import OwnerAddress
from ray._private.object_ref import ObjectRef
from ray.exceptions import RayError


class LocalModeUnsupported(RayError, NotImplementedError):
    """A cluster-only feature was used under ``ray.init(local_mode=True)``."""


@dataclasses.dataclass(frozen=True)
class ActorInfo:
    """Enough to build an actor handle (``ray.get_actor``)."""

    actor_id: bytes
    class_name: str
    methods: dict


@dataclasses.dataclass(frozen=True)
class Identity:
    """Who is running: for ``ray.get_runtime_context()``."""

    job_id: str  # hex
    node_id: str  # hex, or "local"
    worker_id: str  # hex
    namespace: str
    task_id: str | None  # hex of the running task, None outside tasks
    actor_id: str | None  # hex of this process's actor, None if it is not one
    placement_group_id: str | None = None  # hex of the running task's group
    task_name: str | None = None  # the running task's name (actor calls: Class.method)
    actor_name: str | None = None  # this process's actor's name, if it has one
    actor_restarts: int = 0  # how many times this process's actor was restarted before
    capture_child_tasks: bool = False  # children join the running task's group
    gcs_address: str | None = None  # host:port of the cluster's GCS


class Runtime(abc.ABC):
    """One per process between ``ray.init`` and ``ray.shutdown``."""

    address_info: dict
    # The resolved runtime_env of this job (driver) or worker; set by ``ray.init``.
    runtime_env: dict

    # -- references (called from ObjectRef) -----------------------------------------
    @abc.abstractmethod
    def add_local_ref(self, object_id: bytes, owner: OwnerAddress | None) -> None: ...

    @abc.abstractmethod
    def remove_local_ref(self, object_id: bytes) -> None:
        """Must be safe to call from ``__del__`` (any thread, any lock held)."""

    @abc.abstractmethod
    def owner_address(self) -> OwnerAddress | None:
        """Where refs created here say their owner is (pickled with them)."""

    # -- objects ----------------------------------------------------------------------
    @abc.abstractmethod
    def put(self, value: Any) -> ObjectRef: ...

    @abc.abstractmethod
    def get(self, refs: list[ObjectRef], timeout_s: float | None) -> list: ...

    @abc.abstractmethod
    def wait(self, refs: list[ObjectRef], num_returns: int, timeout_s: float | None,
             fetch_local: bool = True) -> tuple[list[ObjectRef], list[ObjectRef]]: ...

    @abc.abstractmethod
    def as_future(self, ref: ObjectRef) -> concurrent.futures.Future: ...

    # -- tasks and actors ----------------------------------------------------------------
    @abc.abstractmethod
    def export_function(self, fn: Any) -> Any:
        """An id the runtime's ``submit_task``/``create_actor`` accept for ``fn``."""

    @abc.abstractmethod
    def submit_task(self, function_id: Any, name: str, args: tuple, kwargs: dict,
                    opts: Any) -> list[ObjectRef]:
        """The task's refs (for ``num_returns="streaming"``: one ObjectRefGenerator)."""

    @abc.abstractmethod
    def create_actor(self, class_id: Any, cls: type, methods: dict, args: tuple,
                     kwargs: dict, opts: Any) -> bytes: ...

    @abc.abstractmethod
    def submit_actor_task(self, actor_id: bytes, method: str, args: tuple, kwargs: dict,
                          num_returns: int | str, enable_task_events: bool = True, *,
                          name: str | None = None, concurrency_group: str | None = None,
                          retry_exceptions: bool | tuple = False,
                          max_task_retries: int | None = None) -> list[ObjectRef]:
        """The call's refs (for ``num_returns="streaming"``: one ObjectRefGenerator).
        ``name``: the call's task name (``.options(name=)``; the worker's process title
        is ``ray::<name>`` while it runs); ``concurrency_group``: the group it runs in;
        ``retry_exceptions``/``max_task_retries``: run it again when it raises (None: the
        actor's max_task_retries)."""

    @abc.abstractmethod
    def actor_handle_created(self, actor_id: bytes) -> None: ...

    @abc.abstractmethod
    def actor_handle_pickled(self, actor_id: bytes) -> None:
        """Called from ``ActorHandle.__reduce__`` (a copy leaves this process)."""

    @abc.abstractmethod
    def actor_handle_deleted(self, actor_id: bytes) -> None:
        """Called from ``ActorHandle.__del__``: must not block or raise."""

    @abc.abstractmethod
    def kill_actor(self, actor_id: bytes, no_restart: bool) -> None: ...

    @abc.abstractmethod
    def named_actor(self, name: str, namespace: str | None) -> ActorInfo:
        """The live actor of that name; ValueError naming it if there is none."""

    @abc.abstractmethod
    def actor_info(self, actor_id: bytes) -> ActorInfo:
        """What a handle to that actor needs (``RuntimeContext.current_actor``)."""

    @abc.abstractmethod
    def exit_actor(self) -> None:
        """End the current actor (raises in its worker); TypeError outside an actor."""

    @abc.abstractmethod
    def cancel(self, ref: ObjectRef, force: bool, recursive: bool) -> None:
        """Stop the task that makes ``ref`` (``ray.cancel``): its ``ray.get`` raises
        ``TaskCancelledError`` (or ``WorkerCrashedError`` with ``force``)."""

    # -- generator tasks (the caller's ObjectRefGenerator) ------------------------------
    @abc.abstractmethod
    def next_generator_item(self, generator_id: bytes, index: int,
                            timeout_s: float | None) -> ObjectRef:
        """The ref of value ``index`` a streaming task yields (waits for it);
        ``StopIteration`` past its last value; ``GetTimeoutError`` after ``timeout_s``."""

    @abc.abstractmethod
    def generator_item_ready(self, generator_id: bytes, index: int) -> bool: ...

    @abc.abstractmethod
    def generator_exhausted(self, generator_id: bytes, index: int) -> bool: ...

    @abc.abstractmethod
    def release_generator(self, generator_id: bytes) -> None:
        """The caller dropped its generator (from ``__del__``: must not block or raise)."""

    # -- who and where -------------------------------------------------------------------
    @abc.abstractmethod
    def identity(self) -> Identity: ...

    @abc.abstractmethod
    def resource_ids_now(self) -> dict:
        """The resource instances the running task holds: name -> [(id, fraction)]."""

    @abc.abstractmethod
    def nodes(self) -> list[dict]: ...

    @abc.abstractmethod
    def cluster_resources(self) -> dict: ...

    @abc.abstractmethod
    def available_resources(self) -> dict: ...

    # -- cluster services (local mode raises LocalModeUnsupported) ---------------------
    @abc.abstractmethod
    def gcs_client(self) -> Any:
        """The GCS client (key-value store, tables, pub/sub) of the connected cluster."""

    @abc.abstractmethod
    def placement_groups(self) -> Any:
        """The caller side of placement groups (``runtime.placement_groups.Client``)."""

    @abc.abstractmethod
    def timeline_events(self) -> list[dict]:
        """Every recorded profile event of the cluster (after flushing our own)."""

    @abc.abstractmethod
    def profile_span(self, event_type: str, name: str,
                     extra: dict | None = None) -> contextlib.AbstractContextManager:
        """A span on the timeline (``ray.profile``); a no-op where nothing is recorded."""

    @abc.abstractmethod
    def reference_table(self) -> list[dict]:
        """This process's live object references (``ray.objects``, ``ray memory``)."""

    @abc.abstractmethod
    def pushed_errors(self) -> list[dict]:
        """Errors pushed to this driver (its tasks' failures and warnings)."""

    @abc.abstractmethod
    def shutdown(self) -> None: ...


__all__ = ["ActorInfo", "Identity", "LocalModeUnsupported", "Runtime"]
