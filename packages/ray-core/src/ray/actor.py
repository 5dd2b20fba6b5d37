"""``@ray.remote`` on a class: actor classes, handles and methods.

Also the 0.7 helpers: ``ray.actor.exit_actor()`` and the ``Checkpointable``
interface for actors that save and restore their state across restarts.
"""

from __future__ import annotations

from ray._private import checkpoint as _checkpoint
from ray._private import runtime as _runtime
from ray._private.actor_methods import constructor_signature as _constructor_signature
from ray._private.actor_methods import method_table as _method_table
from ray._private.actor_methods import with_task_events as _with_task_events
from ray._private.api import connected_runtime as _connected_runtime
from ray._private.ids import ActorID
from ray._private.options import ActorOptions, check_method_option
from ray._private.suggest import unknown_keyword_error
from ray.remote_function import dag_unsupported as _dag_unsupported


class ActorClassInheritanceException(TypeError):
    """A class tried to inherit from an actor class (``class B(A)`` with ``A`` decorated by
    ``@ray.remote``): inherit from the plain class and decorate the subclass instead."""


class ActorClass:
    """What ``@ray.remote`` makes of a class: ``.remote()``/``.options()`` create actors.

    As in Ray, the object is an instance of a class derived from both ``ActorClass`` and
    the user's class, so the class's attributes, static and class methods and its MRO are
    reachable through it (``Counter.LIMIT``, ``Counter.factory(...)``), while
    ``Counter()`` raises and ``class B(Counter)`` raises ``ActorClassInheritanceException``.
    Build one with ``ActorClass._ray_from_class(cls, options)``.
    """

    def __init__(cls, name, bases, attr):
        # Reached only when a class statement names an actor class as a base (its
        # metaclass is then the actor class's type).
        for base in bases:
            if isinstance(base, ActorClass):
                raise ActorClassInheritanceException(
                    f"Attempted to define subclass {name!r} of actor class "
                    f"{base.__name__!r}. Inheriting from actor classes is not currently "
                    "supported. You can instead inherit from a non-actor base class and make "
                    "the derived class an actor class (with @ray.remote).")
        raise TypeError("ActorClass cannot be constructed directly: decorate a class with "
                        "@ray.remote instead.")

    @classmethod
    def _ray_from_class(cls, user_cls: type, options: ActorOptions, methods: dict | None = None,
                        init_signature=None) -> ActorClass:
        self = _derived_instance(user_cls)
        set_attr = object.__setattr__  # the user's class may define __setattr__
        set_attr(self, "__ray_actor_class__", user_cls)
        set_attr(self, "_options", options)
        set_attr(self, "_methods", _method_table(user_cls) if methods is None else methods)
        set_attr(self, "_init_signature", _constructor_signature(user_cls)
                 if methods is None else init_signature)
        set_attr(self, "_class_id", None)
        set_attr(self, "_exported_to", None)
        for name in ("__name__", "__qualname__", "__module__", "__doc__"):
            set_attr(self, name, getattr(user_cls, name, None))
        return self

    def __call__(self, *args, **kwargs):
        raise TypeError(
            f"Actors cannot be instantiated directly: use {self.__name__}.remote(...) "
            f"instead of {self.__name__}(...)."
        )

    # The user's class may define these; the actor class object keeps object's.
    __eq__ = object.__eq__
    __hash__ = object.__hash__
    __setattr__ = object.__setattr__
    __getattribute__ = object.__getattribute__

    def __repr__(self):
        return f"<ray.actor.ActorClass({self.__name__})>"

    def __reduce__(self):
        # Captured by (or passed to) a task: rebuilt on the other side (the export
        # belongs to this process's runtime). The method table travels computed: while a
        # class that refers to its own actor class is unpickled, it is still empty.
        return _rebuild_actor_class, (self.__ray_actor_class__, self._options, self._methods,
                                      self._init_signature)

    def remote(self, *args, **kwargs) -> ActorHandle:
        return self._create(self._options, args, kwargs)

    def options(self, **kwargs) -> _ActorClassWithOptions:
        return _ActorClassWithOptions(self, ActorOptions.from_kwargs(kwargs, self._options))

    def bind(self, *args, **kwargs):
        raise _dag_unsupported(self.__name__, f"{self.__name__}.remote(...) to create the actor")

    def _remote(self, args=None, kwargs=None, **options) -> ActorHandle:
        """``Actor._remote(args=[...], kwargs={...}, **options)`` (used by libraries): the
        same as ``Actor.options(**options).remote(*args, **kwargs)``."""
        opts = ActorOptions.from_kwargs(options, self._options) if options else self._options
        return self._create(opts, tuple(args or ()), dict(kwargs or {}))

    def _create(self, opts: ActorOptions, args, kwargs) -> ActorHandle:
        if self._init_signature is not None:
            self._init_signature.check(args, kwargs, f"{self.__name__}.remote()")
        rt = _connected_runtime()
        if self._exported_to is not rt:
            self._class_id = rt.export_function(self.__ray_actor_class__)
            self._exported_to = rt
        methods = _with_task_events(self._methods, opts.enable_task_events)
        actor_id = rt.create_actor(
            self._class_id, self.__ray_actor_class__, methods, args, kwargs, opts
        )
        return ActorHandle(actor_id, self.__name__, methods, original=True)


def _derived_instance(user_cls: type):
    """An empty instance of ``ActorClass(<user class>)``: derived from ActorClass and the
    user's class. A class Python cannot derive from that way (a metaclass conflict, a
    ``__new__`` that needs arguments, ...) gets a plain ActorClass, without the class's
    attributes."""

    def __init__(self, *args, **kwargs):
        try:
            ActorClass.__init__(self, *args, **kwargs)
        except ActorClassInheritanceException:
            raise
        except TypeError:
            # ``cls(...)`` inside a classmethod called through the actor class (a
            # factory): build a plain instance of the user's class, as Ray does.
            user_cls.__init__(self, *args, **kwargs)

    name = f"ActorClass({user_cls.__name__})"
    try:
        derived = type(user_cls)(name, (ActorClass, user_cls), {
            "__init__": __init__, "__module__": user_cls.__module__, "__qualname__": name})
        return derived.__new__(derived)
    except TypeError:
        return object.__new__(ActorClass)


def _rebuild_actor_class(user_cls, options, methods, init_signature) -> ActorClass:
    return ActorClass._ray_from_class(user_cls, options, methods, init_signature)


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

    def bind(self, *args, **kwargs):
        name = self._actor_class.__name__
        raise _dag_unsupported(f"{name}.options(...)",
                               f"{name}.options(...).remote(...) to create the actor")

    def _remote(self, args=None, kwargs=None, **options) -> ActorHandle:
        opts = ActorOptions.from_kwargs(options, self._opts) if options else self._opts
        return self._actor_class._create(opts, tuple(args or ()), dict(kwargs or {}))


# Names that copy, pickle and friends look up on instances: a method of the user's class
# with such a name is not reachable through a handle (it would be called by them).
_PROBED_PROTOCOLS = frozenset({
    "__copy__", "__deepcopy__", "__getstate__", "__setstate__", "__reduce__",
    "__reduce_ex__", "__getnewargs__", "__getnewargs_ex__", "__length_hint__"})


class ActorHandle:
    """A reference to an actor; pass it to tasks and other actors freely."""

    def __init__(self, actor_id: bytes, class_name: str, methods: dict, original: bool = False,
                 unpickled: bool = False):
        self._actor_id = ActorID(actor_id)
        self._class_name = class_name
        self._methods = methods
        # Handles .remote() made (``original``) and their unpickled copies keep the actor (see
        # actor_scope: in its owner's process, and as a borrow in any other); as in Ray,
        # those ray.get_actor and the runtime context give out do not.
        rt = (_runtime.current() if original
              else _runtime.maybe_current() if unpickled else None)
        self._counted = rt is not None
        if rt is not None:
            rt.actor_handle_created(actor_id)

    def __getattr__(self, name):
        methods = self.__dict__.get("_methods", {})
        if name not in methods or name in _PROBED_PROTOCOLS:
            raise AttributeError(
                f"Actor {self.__dict__.get('_class_name')} has no method {name!r}"
            )
        info = methods[name]
        return ActorMethod(self, name, info.num_returns, info.enable_task_events is not False,
                           info.signature, retry_exceptions=info.retry_exceptions,
                           max_task_retries=info.max_task_retries)

    def __dir__(self):
        # The methods a caller may invoke (as Ray lists them, for tab completion).
        return list(self._methods)

    def __repr__(self):
        return f"Actor({self._class_name}, {self._actor_id.hex()})"

    def __eq__(self, other):
        return isinstance(other, ActorHandle) and other._actor_id == self._actor_id

    def __hash__(self):
        return hash(self._actor_id)

    def __reduce__(self):
        # A copy of a handle that keeps the actor keeps it too; one of a weak handle
        # (ray.get_actor, the runtime context's current_actor) is weak as well.
        strong = bool(self.__dict__.get("_counted"))
        rt = _runtime.maybe_current() if strong else None
        if rt is not None:
            rt.actor_handle_pickled(self._actor_id.binary())
        return ActorHandle, (self._actor_id.binary(), self._class_name, self._methods, False,
                             strong)

    def __del__(self):
        if self.__dict__.get("_counted"):
            rt = _runtime.maybe_current()
            if rt is not None:  # (it only queues work: never blocks or raises)
                rt.actor_handle_deleted(self._actor_id.binary())

    @property
    def _ray_actor_id(self):
        return self._actor_id


class ActorMethod:
    def __init__(self, handle: ActorHandle, name: str, num_returns: int,
                 enable_task_events: bool = True, signature=None, *,
                 call_name: str | None = None, concurrency_group: str | None = None,
                 retry_exceptions: bool | tuple = False, max_task_retries: int | None = None):
        self._handle = handle
        self._actor_id = handle._actor_id.binary()
        self._name = name
        self._num_returns = num_returns
        self._enable_task_events = enable_task_events
        self._signature = signature
        self._call_name = call_name  # .options(name=): the call's task name
        self._concurrency_group = concurrency_group
        # Run a call again when it raises these (True: any exception), up to
        # max_task_retries times (None: the actor's max_task_retries).
        self._retry_exceptions = retry_exceptions
        self._max_task_retries = max_task_retries

    def __call__(self, *args, **kwargs):
        raise TypeError(
            f"Actor methods cannot be called directly: use "
            f"actor.{self._name}.remote(...) instead of actor.{self._name}(...)."
        )

    def remote(self, *args, **kwargs):
        return self._submit(args, kwargs, self._num_returns)

    def options(self, **kwargs):
        valid = {"num_returns", "num_return_vals", "name", "concurrency_group",
                 "enable_task_events", "retry_exceptions", "max_task_retries"}
        for key in kwargs:
            if key not in valid:
                raise unknown_keyword_error("actor method .options()", key, valid)
        num_returns = kwargs.get("num_returns", kwargs.get("num_return_vals", self._num_returns))
        if num_returns is None:  # as Ray: the method's own (streaming for a generator)
            num_returns = self._handle._methods[self._name].num_returns
        enable_task_events = kwargs.get("enable_task_events", self._enable_task_events)
        if not isinstance(enable_task_events, bool):
            raise TypeError(f"enable_task_events must be True or False, got "
                            f"{enable_task_events!r}")
        call_name = kwargs.get("name", self._call_name)
        if call_name is not None and not isinstance(call_name, str):
            raise TypeError(f"The actor method option name must be a string, got {call_name!r}")
        group = kwargs.get("concurrency_group", self._concurrency_group)
        if group is not None and not isinstance(group, str):
            raise TypeError(f"The actor method option concurrency_group must be the name of "
                            f"one of the actor's concurrency groups, got {group!r}")
        retry = {key: check_method_option(key, kwargs[key])
                 for key in ("retry_exceptions", "max_task_retries") if key in kwargs}
        return ActorMethod(self._handle, self._name, num_returns, enable_task_events,
                           self._signature, call_name=call_name, concurrency_group=group,
                           retry_exceptions=retry.get("retry_exceptions",
                                                      self._retry_exceptions),
                           max_task_retries=retry.get("max_task_retries",
                                                      self._max_task_retries))

    def bind(self, *args, **kwargs):
        raise _dag_unsupported(f"actor.{self._name}", f"actor.{self._name}.remote(...)")

    def _remote(self, args=None, kwargs=None, **options):
        """``actor.method._remote(args=[...], kwargs={...}, num_returns=...)`` (used by
        libraries): ``actor.method.options(**options).remote(*args, **kwargs)``."""
        method = self.options(**options) if options else self
        return method._submit(tuple(args or ()), dict(kwargs or {}), method._num_returns)

    def _submit(self, args, kwargs, num_returns):
        if self._signature is not None:
            self._signature.check(args, kwargs, f"{self._handle._class_name}.{self._name}"
                                  ".remote()")
        refs = _connected_runtime().submit_actor_task(
            self._actor_id, self._name, args, kwargs, num_returns,
            self._enable_task_events, name=self._call_name,
            concurrency_group=self._concurrency_group, retry_exceptions=self._retry_exceptions,
            max_task_retries=self._max_task_retries)
        if num_returns == 1 or isinstance(num_returns, str):  # str: a generator's one ref
            return refs[0]
        if num_returns == 0:
            return None
        return refs


def exit_actor():
    """Intentionally exit the current actor (Ray's semantics): the method that calls it
    stops at once (``SystemExit``; ``AsyncioActorExit`` in an async actor) and fails
    with ``ActorDiedError``, calls queued behind it fail, the process's ``atexit``
    handlers run, and the actor is not restarted; later calls raise ``ActorDiedError``
    saying it exited via ``exit_actor()``. ``TypeError`` outside an actor."""
    _runtime.current().exit_actor()


# The 0.7 checkpoint interface lives below the runtime (which restores checkpoints).
Checkpoint = _checkpoint.Checkpoint
CheckpointContext = _checkpoint.CheckpointContext
Checkpointable = _checkpoint.Checkpointable
