"""``@ray.remote`` on a class: actor classes, handles and methods.

Also the 0.7 helpers: ``ray.actor.exit_actor()`` and the ``Checkpointable``
interface for actors that save and restore their state across restarts.
"""

from __future__ import annotations

import abc
import collections
import inspect

from ray._private import runtime as _runtime
from ray._private.options import ActorOptions
from ray._private.suggest import unknown_keyword_error


def _is_cython_function(member) -> bool:
    # Methods of a Cython-compiled class (``binding=True``) are cyfunctions, which
    # inspect.isfunction does not recognise.
    return type(member).__name__ == "cython_function_or_method"


def _method_table(cls) -> dict[str, list]:
    """name -> [num_returns, is_async] for every public method of ``cls``."""
    table = {}
    for name, member in inspect.getmembers(cls):
        if name.startswith("__") and name not in ("__call__",):
            continue
        if not (inspect.isfunction(member) or inspect.ismethod(member) or _is_cython_function(member)):
            continue
        num_returns = getattr(member, "__ray_num_returns__", 1)
        is_async = inspect.iscoroutinefunction(member) or inspect.isasyncgenfunction(member)
        table[name] = [num_returns, is_async]
    return table


class ActorClass:
    def __init__(self, cls, options: ActorOptions):
        self.__ray_actor_class__ = cls
        self._options = options
        self._methods = _method_table(cls)
        self._class_id = None
        self._exported_to = None
        self.__name__ = cls.__name__
        self.__qualname__ = cls.__qualname__
        self.__module__ = cls.__module__
        self.__doc__ = cls.__doc__

    def __call__(self, *args, **kwargs):
        raise TypeError(
            f"Actors cannot be instantiated directly: use {self.__name__}.remote(...) "
            f"instead of {self.__name__}(...)."
        )

    def remote(self, *args, **kwargs) -> ActorHandle:
        return self._create(self._options, args, kwargs)

    def options(self, **kwargs) -> _ActorClassWithOptions:
        return _ActorClassWithOptions(self, ActorOptions.from_kwargs(kwargs, self._options))

    def _create(self, opts: ActorOptions, args, kwargs) -> ActorHandle:
        rt = _runtime.current()
        if self._exported_to is not rt:
            self._class_id = rt.export_function(self.__ray_actor_class__)
            self._exported_to = rt
        actor_id = rt.create_actor(
            self._class_id, self.__ray_actor_class__, self._methods, args, kwargs, opts
        )
        return ActorHandle(actor_id, self.__name__, self._methods, original=True)


class _ActorClassWithOptions:
    def __init__(self, actor_class: ActorClass, opts: ActorOptions):
        self._actor_class = actor_class
        self._opts = opts

    def remote(self, *args, **kwargs) -> ActorHandle:
        return self._actor_class._create(self._opts, args, kwargs)

    def options(self, **kwargs):
        return _ActorClassWithOptions(
            self._actor_class, ActorOptions.from_kwargs(kwargs, self._opts)
        )


class ActorHandle:
    """A reference to an actor; pass it to tasks and other actors freely."""

    def __init__(self, actor_id: bytes, class_name: str, methods: dict, original: bool = False):
        self._actor_id = actor_id
        self._class_name = class_name
        self._methods = methods
        self._original = original
        if original:
            _runtime.current().actor_handle_created(actor_id)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        methods = self.__dict__.get("_methods", {})
        if name not in methods:
            raise AttributeError(
                f"Actor {self.__dict__.get('_class_name')} has no method {name!r}"
            )
        return ActorMethod(self, name, methods[name][0])

    def __repr__(self):
        return f"Actor({self._class_name}, {self._actor_id.hex()})"

    def __eq__(self, other):
        return isinstance(other, ActorHandle) and other._actor_id == self._actor_id

    def __hash__(self):
        return hash(self._actor_id)

    def __reduce__(self):
        return ActorHandle, (self._actor_id, self._class_name, self._methods, False)

    def __del__(self):
        if self._original:
            rt = _runtime.maybe_current()
            if rt is not None:
                try:
                    rt.actor_handle_deleted(self._actor_id)
                except Exception:
                    pass

    @property
    def _ray_actor_id(self):
        return self._actor_id


class ActorMethod:
    def __init__(self, handle: ActorHandle, name: str, num_returns: int):
        self._handle = handle
        self._name = name
        self._num_returns = num_returns

    def __call__(self, *args, **kwargs):
        raise TypeError(
            f"Actor methods cannot be called directly: use "
            f"actor.{self._name}.remote(...) instead of actor.{self._name}(...)."
        )

    def remote(self, *args, **kwargs):
        return self._submit(args, kwargs, self._num_returns)

    def options(self, **kwargs):
        valid = {"num_returns", "num_return_vals", "name", "concurrency_group"}
        for key in kwargs:
            if key not in valid:
                raise unknown_keyword_error("actor method .options()", key, valid)
        num_returns = kwargs.get("num_returns", kwargs.get("num_return_vals", self._num_returns))
        method = ActorMethod(self._handle, self._name, num_returns)
        return method

    def _submit(self, args, kwargs, num_returns):
        refs = _runtime.current().submit_actor_task(
            self._handle._actor_id, self._name, args, kwargs, num_returns
        )
        if num_returns == 1:
            return refs[0]
        if num_returns == 0:
            return None
        return refs


def exit_actor():
    """End the current actor process after the current method returns."""
    rt = _runtime.current()
    if getattr(rt, "actor_id", None) is None:
        raise TypeError("exit_actor() may only be called from inside an actor method")
    rt.exit_actor()


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
