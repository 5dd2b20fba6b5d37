"""The method table of an actor class: what handles may call and how.

Below the runtime (local mode builds handles' tables from it too); ``ray.actor``
uses it when ``@ray.remote`` decorates a class.
"""

from __future__ import annotations

import inspect
from typing import Any

import cloudpickle

from ray._private.signatures import CallSignature


def is_cython_function(member) -> bool:
    # Methods of a Cython-compiled class (``binding=True``) are cyfunctions, which
    # inspect.isfunction does not recognise.
    return type(member).__name__ == "cython_function_or_method"


class MethodInfo:
    """How a handle calls one method: its returns, whether it is a coroutine, whether its
    calls record task events (None: the actor's option decides), the signature its
    arguments must bind to (None: unknown, not checked), and when its caller runs a call
    again (``@ray.method(retry_exceptions=, max_task_retries=)``; None: the actor's
    ``max_task_retries``)."""

    __slots__ = ("num_returns", "is_async", "enable_task_events", "signature",
                 "retry_exceptions", "max_task_retries")

    def __init__(self, num_returns: Any = 1, is_async: bool = False,
                 enable_task_events: bool | None = None,
                 signature: CallSignature | None = None,
                 retry_exceptions: bool | tuple = False, max_task_retries: int | None = None):
        self.num_returns = num_returns
        self.is_async = is_async
        self.enable_task_events = enable_task_events
        self.signature = signature
        self.retry_exceptions = retry_exceptions
        self.max_task_retries = max_task_retries

    def to_wire(self) -> list:
        """The msgpack form (the GCS actor table keeps it for ``ray.get_actor``; exception
        classes travel pickled)."""
        sig = self.signature
        retry = self.retry_exceptions
        return [self.num_returns, self.is_async, self.enable_task_events,
                None if sig is None else sig.to_wire(),
                retry if isinstance(retry, bool) else cloudpickle.dumps(retry),
                self.max_task_retries]

    @classmethod
    def from_wire(cls, wire: Any) -> MethodInfo:
        num_returns, is_async, enable_task_events, sig, retry, max_retries = (
            list(wire) + [None] * 6)[:6]
        if isinstance(retry, bytes):
            retry = tuple(cloudpickle.loads(retry))
        return cls(num_returns, bool(is_async), enable_task_events,
                   None if sig is None else CallSignature.from_wire(sig), bool(retry)
                   if not isinstance(retry, tuple) else retry, max_retries)

    def with_task_events(self, enable_task_events: bool | None) -> MethodInfo:
        return MethodInfo(self.num_returns, self.is_async, enable_task_events, self.signature,
                          self.retry_exceptions, self.max_task_retries)

    def __reduce__(self):
        return MethodInfo.from_wire, (self.to_wire(),)


def method_table(cls) -> dict[str, MethodInfo]:
    """name -> MethodInfo for every method of ``cls`` (Python functions, dunders included,
    as Ray lists them) and the built-in ``__ray_*__`` methods (``enable_task_events``:
    ``@ray.method``'s, None where it sets none: the actor's option decides, see
    ``with_task_events``)."""
    table = {}
    for name, member in inspect.getmembers(cls):
        if not (inspect.isfunction(member) or inspect.ismethod(member) or is_cython_function(member)):
            continue
        is_async = inspect.iscoroutinefunction(member) or inspect.isasyncgenfunction(member)
        is_generator = inspect.isgeneratorfunction(member) or inspect.isasyncgenfunction(member)
        # As Ray 2.x: a generator method streams its values unless told otherwise.
        num_returns = getattr(member, "__ray_num_returns__", None)
        if num_returns is None:
            num_returns = "streaming" if is_generator else 1
        # A plain method takes self; a staticmethod nothing extra; a classmethod comes
        # bound to the class already.
        is_static = isinstance(inspect.getattr_static(cls, name, None), staticmethod)
        drop_self = not is_static and not inspect.ismethod(member)
        table[name] = MethodInfo(num_returns, is_async,
                                 getattr(member, "__ray_enable_task_events__", None),
                                 CallSignature.of(member, drop_first=drop_self),
                                 getattr(member, "__ray_retry_exceptions__", False),
                                 getattr(member, "__ray_max_task_retries__", None))
    table.setdefault("__init__", MethodInfo(1, False, None, CallSignature([])))
    table.update(BUILTIN_METHODS)
    return table


# What every actor answers besides its class's methods (as in Ray): ``__ray_ready__()``
# (True once the constructor ran), ``__ray_call__(fn, *args, **kwargs)`` (runs
# ``fn(actor, *args, **kwargs)`` in the actor) and ``__ray_terminate__()`` (exit once the
# calls before it are done). The actor's worker implements them (``actor_worker``).
BUILTIN_METHODS = {
    "__ray_ready__": MethodInfo(1, False, None, CallSignature([])),
    "__ray_call__": MethodInfo(1, False, None, CallSignature([("fn", 0, False),
                                                             ("args", 2, False),
                                                             ("kwargs", 4, False)])),
    "__ray_terminate__": MethodInfo(1, False, None, CallSignature([])),
}


def constructor_signature(cls) -> CallSignature | None:
    """What ``ActorClass.remote(...)`` must bind to: ``cls(...)``'s parameters."""
    init = inspect.getattr_static(cls, "__init__", None)
    if init is None or init is object.__init__:
        return CallSignature([])
    return CallSignature.of(cls.__init__, drop_first=True) if inspect.isfunction(
        cls.__init__) else None


def with_task_events(table: dict[str, MethodInfo], default: bool) -> dict[str, MethodInfo]:
    """The table an actor is created with: each method's ``enable_task_events`` resolved
    (its own ``@ray.method`` setting, else the actor's ``enable_task_events`` option)."""
    return {name: m.with_task_events(default if m.enable_task_events is None
                                     else m.enable_task_events)
            for name, m in table.items()}


def table_to_wire(table: dict[str, MethodInfo]) -> dict[str, list]:
    return {name: m.to_wire() for name, m in table.items()}


def table_from_wire(wire: dict) -> dict[str, MethodInfo]:
    return {name: MethodInfo.from_wire(m) for name, m in (wire or {}).items()}


__all__ = ["BUILTIN_METHODS", "MethodInfo", "constructor_signature", "is_cython_function", "method_table",
           "table_from_wire", "table_to_wire", "with_task_events"]
