"""The errors ray raises. Every one pickles and says what to do next.

::

    RayError
     ├── RayTaskError            a task or actor method raised; ray.get re-raises it.
     │                           Also an instance of the original exception class,
     │                           so ``except ValueError`` catches a remote ValueError.
     ├── RayActorError           the actor died (or was killed) before the call finished
     ├── WorkerCrashedError      the worker process running a task died
     ├── ObjectLostError         every copy of an object is gone and it cannot be rebuilt
     │    └── UnreconstructableError (the 0.7 name)
     ├── GetTimeoutError         ray.get(timeout=...) expired (also a TimeoutError)
     ├── ObjectStoreFullError    the node's object store cannot hold the object (also a MemoryError)
     ├── TaskCancelledError      ray.cancel stopped the task
     ├── TaskUnschedulableError  a hard scheduling constraint cannot be met (dead node)
     │    └── ActorUnschedulableError
     ├── TaskPlacementGroupRemoved   the task's placement group was removed
     │    └── ActorPlacementGroupRemoved
     ├── RuntimeEnvSetupError    a node could not set up a task's or actor's runtime_env
     ├── RaySystemError          an internal component failed (message says which)
     ├── RayConnectionError      cannot reach the cluster (address, password, auth)
     │    ├── AuthenticationError  a peer did not present the cluster secret
     │    └── GcsUnavailableError  the GCS (Redis) stopped answering mid-session
"""

from __future__ import annotations

import os
import socket


class RayError(Exception):
    """Base class of every error ray raises on purpose."""


class RaySystemError(RayError):
    """An internal component (raylet, GCS, object store) failed."""


class RayConnectionError(RayError, ConnectionError):
    """The driver or a node cannot reach (or authenticate with) the cluster."""


class AuthenticationError(RayConnectionError):
    """A connection did not present the cluster secret."""


class GcsUnavailableError(RayConnectionError):
    """The GCS (the head node's Redis) stopped answering: it is restarting, or gone."""


class GetTimeoutError(RayError, TimeoutError):
    """``ray.get`` or ``ray.wait`` timed out."""


class ObjectStoreFullError(RayError, MemoryError):
    """The object store is full of pinned objects and cannot make room."""


class TaskCancelledError(RayError):
    """The task was cancelled with ``ray.cancel``."""

    def __init__(self, task_id: str = ""):
        super().__init__(f"Task {task_id} was cancelled.")
        self.task_id = task_id

    def __reduce__(self):
        return type(self), (self.task_id,)


class ObjectLostError(RayError):
    """Every copy of the object is lost and it cannot be reconstructed."""

    def __init__(self, object_ref_hex: str = "", reason: str = ""):
        self.object_ref_hex = object_ref_hex
        self.reason = reason
        super().__init__(
            f"Object {object_ref_hex} is lost: {reason or 'all copies are gone'}. "
            "Objects created with ray.put cannot be rebuilt; objects returned by tasks are "
            "rebuilt by re-running the task unless its retries are exhausted."
        )

    def __reduce__(self):
        return type(self), (self.object_ref_hex, self.reason)


class UnreconstructableError(ObjectLostError):
    """The 0.7 name of :class:`ObjectLostError`."""


class TaskUnschedulableError(RayError):
    """A task's hard scheduling constraint cannot be met (e.g. NodeAffinity to a dead node)."""

    def __reduce__(self):
        return type(self), self.args


class ActorUnschedulableError(TaskUnschedulableError):
    """An actor's hard scheduling constraint cannot be met."""


class TaskPlacementGroupRemoved(RayError):
    """The placement group the task was scheduled into was removed."""

    def __reduce__(self):
        return type(self), self.args


class ActorPlacementGroupRemoved(TaskPlacementGroupRemoved):
    """The placement group the actor was scheduled into was removed."""


class RuntimeEnvSetupError(RayError):
    """A node could not set up the runtime_env of a task or actor (the message says why)."""

    def __reduce__(self):
        return type(self), self.args


class WorkerCrashedError(RayError):
    """The worker executing the task died unexpectedly."""

    def __init__(self, message: str = ""):
        super().__init__(
            message
            or "The worker died unexpectedly while executing this task "
            "(killed, out of memory or os._exit). Set max_retries to retry it."
        )

    def __reduce__(self):
        return type(self), (self.args[0],)


class RayActorError(RayError):
    """The actor died before (or while) running the method call."""

    def __init__(self, message: str = "", actor_id: str = ""):
        self.actor_id = actor_id
        super().__init__(
            message
            or "The actor died unexpectedly before finishing this task. Set max_restarts "
            "(max_reconstructions) to restart it and max_task_retries to retry calls."
        )

    def __reduce__(self):
        return type(self), (self.args[0], self.actor_id)


class RayTaskError(RayError):
    """A task raised; carries the remote traceback and the original exception."""

    def __init__(
        self,
        function_name: str,
        traceback_str: str,
        cause: BaseException | None = None,
        pid: int | None = None,
        ip: str | None = None,
    ):
        self.function_name = function_name
        self.traceback_str = traceback_str
        self.cause = cause
        self.pid = pid if pid is not None else os.getpid()
        self.ip = ip if ip is not None else _local_ip()
        RayError.__init__(self, self._message())

    def _message(self) -> str:
        return (
            f"{type(self.cause).__name__ if self.cause else 'Error'} in "
            f"{self.function_name} (pid={self.pid}, ip={self.ip}):\n{self.traceback_str}"
        )

    def __str__(self):
        return self._message()

    def as_instanceof_cause(self) -> RayTaskError:
        """Return an error that is both a RayTaskError and an instance of the cause's class."""
        cause_cls = type(self.cause) if self.cause is not None else None
        if cause_cls is None or isinstance(self, cause_cls) or cause_cls is RayTaskError:
            return self
        dual = _dual_class(cause_cls)
        if dual is None:
            return self
        err = _instantiate(dual)
        if err is None:
            return self
        err.__dict__.update(self.__dict__)
        err.args = (self._message(),)
        return err

    def __reduce__(self):
        return _rebuild_task_error, (
            self.function_name,
            self.traceback_str,
            self.cause,
            self.pid,
            self.ip,
            type(self) is not RayTaskError,
        )


_DUAL_CACHE: dict[type, type] = {}


def _dual_class(cause_cls: type) -> type | None:
    if cause_cls in _DUAL_CACHE:
        return _DUAL_CACHE[cause_cls]
    try:
        dual = type(
            f"RayTaskError({cause_cls.__name__})",
            (RayTaskError, cause_cls),
            {"__init__": RayTaskError.__init__, "__str__": RayTaskError.__str__},
        )
        dual.__module__ = __name__
    except TypeError:  # incompatible layouts (e.g. some C exceptions)
        dual = None
    _DUAL_CACHE[cause_cls] = dual
    return dual


def _instantiate(cls):
    """An empty instance of ``cls``: C exception bases (OSError, ...) each insist on
    their own ``__new__``, so try the classes of the MRO until one accepts."""
    for klass in cls.__mro__:
        try:
            return klass.__new__(cls)
        except TypeError:
            continue
    return None


def _rebuild_task_error(function_name, traceback_str, cause, pid, ip, dual):
    err = RayTaskError(function_name, traceback_str, cause, pid, ip)
    return err.as_instanceof_cause() if dual else err


def _local_ip() -> str:
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


__all__ = [
    "AuthenticationError",
    "GcsUnavailableError",
    "GetTimeoutError",
    "ObjectLostError",
    "ObjectStoreFullError",
    "RayActorError",
    "RayConnectionError",
    "RayError",
    "RaySystemError",
    "RayTaskError",
    "RuntimeEnvSetupError",
    "TaskCancelledError",
    "UnreconstructableError",
    "WorkerCrashedError",
]
