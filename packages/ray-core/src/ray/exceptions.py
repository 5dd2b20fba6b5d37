"""The errors ray raises. Every one pickles and says what to do next.

The names, bases and attributes follow Ray 2.x's ``ray.exceptions``, so code that
catches Ray's errors catches ours::

    RayError
     ├── RayTaskError            a task or actor method raised; ray.get re-raises it.
     │                           Also an instance of the original exception class,
     │                           so ``except ValueError`` catches a remote ValueError.
     ├── RayActorError           the actor cannot run the call
     │    ├── ActorDiedError         the actor is dead (killed, crashed, __init__ raised)
     │    └── ActorUnavailableError  the actor is unreachable for now (restarting)
     ├── WorkerCrashedError      the worker process running a task died
     ├── LocalRayletDiedError    the raylet of the task's node died
     ├── NodeDiedError           the node is dead or unreachable
     ├── ObjectLostError         every copy of an object is gone and it cannot be rebuilt
     │    ├── UnreconstructableError (the 0.7 name)
     │    ├── ObjectFetchTimedOutError   no location of the object answered in time
     │    ├── ObjectFreedError           the object was freed explicitly
     │    ├── OwnerDiedError             the process that owned the object exited
     │    ├── ObjectReconstructionFailedError   re-running its task failed or is not allowed
     │    │    ├── ObjectReconstructionFailedMaxAttemptsExceededError
     │    │    └── ObjectReconstructionFailedLineageEvictedError
     │    └── ReferenceCountingAssertionError  (also an AssertionError)
     ├── GetTimeoutError         ray.get(timeout=...) expired (also a TimeoutError)
     ├── ObjectStoreFullError    the node's object store cannot hold the object (also a MemoryError)
     ├── OutOfDiskError          neither the object store nor the spill disk has room
     ├── OutOfMemoryError        the node ran low on memory and killed the task's worker
     ├── PlasmaObjectNotAvailable    an object was not available in time
     ├── TaskCancelledError      ray.cancel stopped the task
     ├── TaskUnschedulableError  a hard scheduling constraint cannot be met (dead node)
     │    └── ActorUnschedulableError
     ├── TaskPlacementGroupRemoved   the task's placement group was removed
     │    └── ActorPlacementGroupRemoved
     ├── PendingCallsLimitExceeded   an actor handle's max_pending_calls was reached
     ├── AsyncioActorExit        an async actor called exit_actor()
     ├── RuntimeEnvSetupError    a node could not set up a task's or actor's runtime_env
     ├── ObjectRefStreamEndOfStreamError  a streaming generator has no more refs
     ├── OufOfBandObjectRefSerializationException  an ObjectRef pickled outside ray
     ├── UnserializableException  an error raised remotely could not be unpickled here
     ├── CrossLanguageError      an error raised in another language
     ├── UserCodeException       wraps an error raised by user code
     ├── RpcError                a control-plane call failed
     ├── ActorAlreadyExistsError   a named actor of that name exists (also a ValueError)
     ├── ActorHandleNotFoundError  the handle belongs to an earlier session (also a ValueError)
     ├── RaySystemError          an internal component failed (message says which)
     ├── UnsupportedFeatureError a Ray API this project does not implement (``.bind()``:
     │                           Ray DAGs); says what to use instead (also a TypeError)
     └── RayConnectionError      cannot reach the cluster (address, password, auth)
          ├── AuthenticationError  a peer did not present the cluster secret
          └── GcsUnavailableError  the GCS (Redis) stopped answering mid-session

Ray's compiled-graph errors (``RayChannelError``, ...) are not here: compiled graphs
are not part of this project (see docs/conformance.md).
"""

from __future__ import annotations

import os
import socket


class RayError(Exception):
    """Base class of every error ray raises on purpose."""


class RaySystemError(RayError):
    """An internal component (raylet, GCS, object store) failed.

    ``RaySystemError(client_exc, traceback_str=None)`` as in Ray: ``client_exc`` is the
    underlying error or a message saying which component failed.
    """

    def __init__(self, client_exc="", traceback_str: str | None = None):
        super().__init__(client_exc, traceback_str)
        self.client_exc = client_exc
        self.traceback_str = traceback_str

    def __str__(self):
        msg = f"System error: {self.client_exc}"
        if self.traceback_str:
            msg += f"\ntraceback: {self.traceback_str}"
        return msg


class RayConnectionError(RayError, ConnectionError):
    """The driver or a node cannot reach (or authenticate with) the cluster."""


class AuthenticationError(RayConnectionError):
    """A connection did not present the cluster secret."""

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class GcsUnavailableError(RayConnectionError):
    """The GCS (the head node's Redis) stopped answering: it is restarting, or gone."""


class CrossLanguageError(RayError):
    """An error raised by a task written in another language."""


class UserCodeException(RayError):
    """Wraps an error raised by user code; ``retry_exceptions`` looks at its cause."""


class RpcError(RayError):
    """A control-plane call failed (``rpc_code`` says how, where known)."""

    def __init__(self, message: str = "", rpc_code: int | None = None):
        super().__init__(message, rpc_code)
        self.message = message
        self.rpc_code = rpc_code

    def __str__(self):
        return self.message


class GetTimeoutError(RayError, TimeoutError):
    """``ray.get`` or ``ray.wait`` timed out."""


class PlasmaObjectNotAvailable(RayError):
    """An object was not available in the object store within the given time."""


class ObjectStoreFullError(RayError, MemoryError):
    """The object store is full of pinned objects and cannot make room."""


class OutOfDiskError(RayError):
    """The object store is full and the disk it spills to is over capacity."""

    def __str__(self):
        return super().__str__() + (
            "\nThe object cannot be created because the local object store is full and "
            "the disk it spills to is over capacity. Free disk space on this node, or "
            "keep fewer objects in scope."
        )


class OutOfMemoryError(RayError):
    """The node ran low on memory and the worker running the task was killed."""

    def __init__(self, message: str = ""):
        super().__init__(message)
        self.message = message

    def __str__(self):
        return self.message


class NodeDiedError(RayError):
    """The node is dead or unreachable."""

    def __init__(self, message: str = ""):
        super().__init__(message)
        self.message = message

    def __str__(self):
        return self.message


class LocalRayletDiedError(RayError):
    """The raylet of the node running the task died."""

    def __str__(self):
        return "The task's local raylet died. Check raylet.out for more information."


class TaskCancelledError(RayError):
    """The task was cancelled with ``ray.cancel``."""

    def __init__(self, task_id=None, error_message: str | None = None):
        super().__init__(task_id, error_message)
        self.task_id = task_id
        self.error_message = error_message

    def __str__(self):
        msg = f"Task: {self.task_id} was cancelled. " if self.task_id else ""
        return msg + (self.error_message or "")


class ObjectLostError(RayError):
    """Every copy of the object is lost and it cannot be reconstructed.

    ``reason`` says why, where known; ``owner_address`` and ``call_site`` (where the
    ref was created) are kept as in Ray.
    """

    def __init__(self, object_ref_hex: str = "", reason: str = "",
                 owner_address=None, call_site: str = ""):
        super().__init__(object_ref_hex, reason, owner_address, call_site)
        self.object_ref_hex = object_ref_hex
        self.reason = reason
        self.owner_address = owner_address
        self.call_site = call_site or ""

    def _base_str(self) -> str:
        msg = f"Failed to retrieve object {self.object_ref_hex}. "
        if self.call_site:
            msg += f"The ObjectRef was created at: {self.call_site}"
        return msg.rstrip()

    def _cause(self) -> str:
        return (
            f"Object {self.object_ref_hex} is lost: {self.reason or 'all copies are gone'}. "
            "Objects created with ray.put cannot be rebuilt; objects returned by tasks are "
            "rebuilt by re-running the task unless its retries are exhausted."
        )

    def __str__(self):
        return self._base_str() + "\n\n" + self._cause()


class UnreconstructableError(ObjectLostError):
    """The 0.7 name of :class:`ObjectLostError`."""


class ObjectFetchTimedOutError(ObjectLostError):
    """No node holding the object answered a fetch in time."""

    def _cause(self) -> str:
        return (
            f"Fetch for object {self.object_ref_hex} timed out because no locations "
            "were found for the object."
        )


class ReferenceCountingAssertionError(ObjectLostError, AssertionError):
    """The object was deleted while a reference to it was still live (a bug)."""

    def _cause(self) -> str:
        return ("The object has already been deleted by the reference counting "
                "protocol. This should not happen.")


class ObjectFreedError(ObjectLostError):
    """The object was freed explicitly (``free``) while a reference remained."""

    def _cause(self) -> str:
        return ("The object was manually freed using the internal `free` call. "
                "Please ensure that `free` is only called once the object is no "
                "longer needed.")


class OwnerDiedError(ObjectLostError):
    """The process that created the object (its owner) exited."""

    def _cause(self) -> str:
        return ("The object's owner has exited. This is the Python worker that first "
                "created the ObjectRef via `.remote()` or `ray.put()`. Check the "
                "session's logs (`<temp_dir>/session_latest/logs`) for why it exited.")


class ObjectReconstructionFailedError(ObjectLostError):
    """Every copy is lost and re-running the task that made it failed or is not
    allowed (``reason`` says which)."""

    def _cause(self) -> str:
        return self.reason or "The object cannot be reconstructed."


class ObjectReconstructionFailedMaxAttemptsExceededError(ObjectReconstructionFailedError):
    """Re-running the task would exceed its ``max_retries``."""

    def _cause(self) -> str:
        return ("The object cannot be reconstructed because the maximum number of task "
                "retries has been exceeded. Increase them with "
                "`@ray.remote(max_retries=N)`.")


class ObjectReconstructionFailedLineageEvictedError(ObjectReconstructionFailedError):
    """The task that made the object is no longer recorded (its lineage was evicted)."""

    def _cause(self) -> str:
        return ("The object cannot be reconstructed because its lineage has been "
                "evicted to reduce memory pressure.")


class TaskUnschedulableError(RayError):
    """A task's hard scheduling constraint cannot be met (e.g. NodeAffinity to a dead node)."""

    _WHAT = "task"

    def __init__(self, error_message: str = ""):
        super().__init__(error_message)
        self.error_message = error_message

    def __str__(self):
        return f"The {self._WHAT} is not schedulable: {self.error_message}"


class ActorUnschedulableError(TaskUnschedulableError):
    """An actor's hard scheduling constraint cannot be met."""

    _WHAT = "actor"


class TaskPlacementGroupRemoved(RayError):
    """The placement group the task was scheduled into was removed."""

    _DEFAULT = "The placement group corresponding to this task has been removed."

    def __str__(self):
        return str(self.args[0]) if self.args and self.args[0] else self._DEFAULT


class ActorPlacementGroupRemoved(TaskPlacementGroupRemoved):
    """The placement group the actor was scheduled into was removed."""

    _DEFAULT = "The placement group corresponding to this Actor has been removed."


class PendingCallsLimitExceeded(RayError):
    """An actor handle already has ``max_pending_calls`` calls in flight."""


class AsyncioActorExit(RayError):
    """Raised inside an async actor by ``ray.actor.exit_actor()`` to end it."""


class RuntimeEnvSetupError(RayError):
    """A node could not set up the runtime_env of a task or actor (the message says why)."""

    def __init__(self, error_message: str | None = None):
        super().__init__(error_message)
        self.error_message = error_message

    def __str__(self):
        return "\n".join(m for m in ["Failed to set up runtime environment.",
                                     self.error_message] if m)


class ObjectRefStreamEndOfStreamError(RayError):
    """A streaming generator has produced all of its ObjectRefs."""


class OufOfBandObjectRefSerializationException(RayError):
    """An ObjectRef was pickled with ``ray.cloudpickle`` outside ray's own
    serialization, which cannot track its lifetime (Ray's spelling of the name)."""


class UnserializableException(RayError):
    """An error raised remotely could not be unpickled here; carries its text."""

    def __init__(self, original_stack_trace: str = ""):
        super().__init__(original_stack_trace)
        self._original_stack_trace = original_stack_trace

    def __str__(self):
        return (
            "Failed to deserialize exception. Refer to https://docs.ray.io/en/latest/"
            "ray-core/objects/serialization.html#custom-serializers-for-exceptions for "
            "more information.\nOriginal exception:\n"
            f"{self._original_stack_trace}"
        )


class ActorAlreadyExistsError(ValueError, RayError):
    """A named actor of that name already exists in the namespace (also a ValueError)."""

    def __init__(self, error_message: str = ""):
        super().__init__(error_message)
        self.error_message = error_message

    def __str__(self):
        return self.error_message


class UnsupportedFeatureError(RayError, TypeError):
    """A Ray API this project does not implement was called: ``.bind()`` of a remote
    function, actor class or actor method (Ray DAGs, Ray Serve deployment graphs and
    compiled graphs are not part of it). The message names the call and what to use
    instead. Also a ``TypeError``: the object does not support that operation here."""


class ActorHandleNotFoundError(ValueError, RayError):
    """The actor handle belongs to an earlier session (also a ValueError)."""

    def __init__(self, error_message: str = ""):
        super().__init__(error_message)
        self.error_message = error_message

    def __str__(self):
        return self.error_message


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
    """The actor cannot run the method call (it died, or is unreachable for now).

    ``RayActorError(message, actor_id)``; ``error_msg``, ``actor_init_failed`` and
    ``preempted`` are read as in Ray.
    """

    BASE_ERROR_MSG = ("The actor died unexpectedly before finishing this task. Set "
                      "max_restarts (max_reconstructions) to restart it and "
                      "max_task_retries to retry calls.")

    def __init__(self, message: str = "", actor_id: str = "", *,
                 actor_init_failed: bool = False, preempted: bool = False):
        self.actor_id = actor_id
        self._actor_init_failed = actor_init_failed
        self._preempted = preempted
        super().__init__(message or self.BASE_ERROR_MSG)

    @property
    def error_msg(self) -> str:
        return self.args[0]

    @property
    def actor_init_failed(self) -> bool:
        """The actor died because its ``__init__`` raised."""
        return self._actor_init_failed

    @property
    def preempted(self) -> bool:
        """The actor died because its node was taken away (drained, preempted)."""
        return self._preempted

    def __reduce__(self):
        return _rebuild_actor_error, (type(self), self.args[0], self.actor_id,
                                      self._actor_init_failed, self._preempted)


def _rebuild_actor_error(cls, message, actor_id, actor_init_failed, preempted):
    err = RayActorError.__new__(cls)
    RayActorError.__init__(err, message, actor_id, actor_init_failed=actor_init_failed,
                           preempted=preempted)
    return err


class ActorDiedError(RayActorError):
    """The actor is dead: killed, its process crashed, or its ``__init__`` raised."""

    @classmethod
    def from_task_error(cls, task_error: RayTaskError) -> ActorDiedError:
        """The error for calls to an actor whose creation task raised ``task_error``."""
        return cls(
            "The actor died because of an error raised in its creation task, "
            f"{task_error}",
            task_error.actor_id or "",
            actor_init_failed=True,
        )


class ActorUnavailableError(RayActorError):
    """The actor is unreachable for now (restarting, or its node is slow to answer);
    the call may or may not have run. Calls made later may succeed."""

    def __init__(self, error_message: str = "", actor_id: str = ""):
        super().__init__(
            f"The actor {actor_id or ''} is unavailable: {error_message}. The task may "
            "or may not have been executed on the actor.",
            actor_id,
        )

    def __reduce__(self):
        return _rebuild_actor_error, (type(self), self.args[0], self.actor_id, False, False)


# Traceback frames from these files are ray's machinery, not the user's code: the
# formatted error leaves them out (as Ray does).
_INTERNAL_FRAME_MARKERS = ("ray/_private/", "ray/worker.py", "ray/actor.py",
                           "ray/remote_function.py", "ray/util/tracing/")
_DEPENDENCY_FAILED_MARKER = "raise_if_dependency_failed"


class RayTaskError(RayError):
    """A task raised; carries the remote traceback and the original exception.

    ``RayTaskError(function_name, traceback_str, cause, pid, ip, *, proctitle,
    actor_repr, actor_id)``. Its text is the remote traceback as Ray prints it: a
    ``ray::f() (pid=..., ip=...)`` header, the user's frames only (ray's own frames
    are left out), then the error.
    """

    def __init__(
        self,
        function_name: str,
        traceback_str: str,
        cause: BaseException | None = None,
        pid: int | None = None,
        ip: str | None = None,
        *,
        proctitle: str | None = None,
        actor_repr: str | None = None,
        actor_id: str | None = None,
    ):
        self.function_name = function_name
        self.traceback_str = traceback_str
        self.cause = cause
        self.pid = pid if pid is not None else os.getpid()
        self.ip = ip if ip is not None else _local_ip()
        self.proctitle = proctitle or _default_proctitle(function_name)
        self.actor_repr = actor_repr
        self.actor_id = actor_id
        RayError.__init__(self, self._message())

    @property
    def _actor_id(self) -> str | None:  # Ray's attribute name
        return self.actor_id

    def _header(self) -> str:
        labels = f"pid={self.pid}, ip={self.ip}"
        if self.actor_repr is not None:
            labels += f", actor_id={self.actor_id}, repr={self.actor_repr}"
        return f"{self.proctitle}() ({labels})"

    def _message(self) -> str:
        return _format_remote_traceback(self.traceback_str, self._header())

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
        err = _instantiate(dual, self.cause)
        if err is None:
            return self
        err.__dict__.update(self.__dict__)
        # Where the cause's class computes ``args`` (a property), the dual error's
        # args are the cause, as in Ray; otherwise the formatted message.
        err.args = (self.cause,) if _computes_args(cause_cls) else (self._message(),)
        return err

    def __reduce__(self):
        return _rebuild_task_error, (
            self.function_name,
            self.traceback_str,
            self.cause,
            self.pid,
            self.ip,
            type(self) is not RayTaskError,
            self.proctitle,
            self.actor_repr,
            self.actor_id,
        )


def _default_proctitle(function_name: str) -> str:
    """``ray::f`` for a function named ``pkg.mod.f`` or ``mod.outer.<locals>.f``."""
    return "ray::" + (function_name or "").rsplit("<locals>.", 1)[-1].rsplit(".", 1)[-1]


def _format_remote_traceback(traceback_str: str, header: str) -> str:
    """Ray's layout: the header replaces each ``Traceback (...)`` line and ray's own
    frames (with their code and caret lines) are dropped."""
    lines = (traceback_str or "").strip().split("\n")
    out: list[str] = []
    skipping_code = False
    for line in lines:
        if line.startswith("Traceback "):
            out.append(header)
            skipping_code = False
        elif line.startswith("  File ") and any(m in line for m in _INTERNAL_FRAME_MARKERS):
            if _DEPENDENCY_FAILED_MARKER in line:
                out.append("  At least one of the input arguments for this task could "
                           "not be computed:")
            skipping_code = True
        elif skipping_code and line.startswith("    "):
            continue  # the internal frame's code line, and Python 3.11's ^^^ markers
        else:
            skipping_code = False
            out.append(line)
    if not out or not out[0].startswith(header):
        out.insert(0, header)
    return "\n".join(out)


_DUAL_CACHE: dict[type, type] = {}


def _dual_class(cause_cls: type) -> type | None:
    if cause_cls in _DUAL_CACHE:
        return _DUAL_CACHE[cause_cls]
    namespace = {"__init__": RayTaskError.__init__, "__str__": RayTaskError.__str__}
    if _computes_args(cause_cls):
        # The user's class computes ``args``: give the dual error its own slot.
        namespace["args"] = property(
            lambda self: self.__dict__.get("_ray_task_error_args", ()),
            lambda self, value: self.__dict__.__setitem__("_ray_task_error_args", value),
        )
    try:
        dual = type(f"RayTaskError({cause_cls.__name__})", (RayTaskError, cause_cls), namespace)
        dual.__module__ = __name__
    except TypeError:  # incompatible layouts (e.g. some C exceptions)
        dual = None
    _DUAL_CACHE[cause_cls] = dual
    return dual


def _computes_args(cls: type) -> bool:
    return isinstance(getattr(cls, "args", None), property)


def _instantiate(cls, cause: BaseException | None = None):
    """An empty instance of ``cls``: C exception bases (OSError, ...) each insist on
    their own ``__new__``, so try the classes of the MRO until one accepts. An exception
    group keeps its cause's sub-exceptions (``except*`` and ``.exceptions`` work)."""
    if isinstance(cause, BaseExceptionGroup):
        try:
            return BaseExceptionGroup.__new__(cls, cause.message, cause.exceptions)
        except TypeError:  # BaseExceptions in a group that must be an Exception
            return None
    for klass in cls.__mro__:
        try:
            return klass.__new__(cls)
        except TypeError:
            continue
    return None


def _rebuild_task_error(function_name, traceback_str, cause, pid, ip, dual,
                        proctitle=None, actor_repr=None, actor_id=None):
    err = RayTaskError(function_name, traceback_str, cause, pid, ip, proctitle=proctitle,
                       actor_repr=actor_repr, actor_id=actor_id)
    return err.as_instanceof_cause() if dual else err


def _local_ip() -> str:
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


__all__ = [
    "ActorAlreadyExistsError",
    "ActorDiedError",
    "ActorHandleNotFoundError",
    "ActorPlacementGroupRemoved",
    "ActorUnavailableError",
    "ActorUnschedulableError",
    "AsyncioActorExit",
    "AuthenticationError",
    "CrossLanguageError",
    "GcsUnavailableError",
    "GetTimeoutError",
    "LocalRayletDiedError",
    "NodeDiedError",
    "ObjectFetchTimedOutError",
    "ObjectFreedError",
    "ObjectLostError",
    "ObjectReconstructionFailedError",
    "ObjectReconstructionFailedLineageEvictedError",
    "ObjectReconstructionFailedMaxAttemptsExceededError",
    "ObjectRefStreamEndOfStreamError",
    "ObjectStoreFullError",
    "OufOfBandObjectRefSerializationException",
    "OutOfDiskError",
    "OutOfMemoryError",
    "OwnerDiedError",
    "PendingCallsLimitExceeded",
    "PlasmaObjectNotAvailable",
    "RayActorError",
    "RayConnectionError",
    "RayError",
    "RaySystemError",
    "RayTaskError",
    "ReferenceCountingAssertionError",
    "RpcError",
    "RuntimeEnvSetupError",
    "TaskCancelledError",
    "TaskPlacementGroupRemoved",
    "TaskUnschedulableError",
    "UnreconstructableError",
    "UnserializableException",
    "UnsupportedFeatureError",
    "UserCodeException",
    "WorkerCrashedError",
]
