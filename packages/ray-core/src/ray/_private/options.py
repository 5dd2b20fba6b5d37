"""Typed options of remote functions and actors, validated once at the API boundary.

``@ray.remote(...)`` and ``.options(...)`` accept both the documented 0.7 names
and today's (``num_return_vals``/``num_returns``,
``max_reconstructions``/``max_restarts``); unknown keys raise a ValueError that
suggests the closest valid name. ``.options()`` is ``dataclasses.replace``.

``_metadata`` (Ray 2.x, for libraries built on ray): a dict keyed by namespace, each
value a dict of that library's settings, e.g. ``f.options(_metadata={"my_lib": {"k":
1}})``. Ray itself never reads it; it is kept on the options (``f._options._metadata``
of a remote function or actor class, ``_opts._metadata`` of what ``.options()``
returns) so the library reads it back, and ``.options(_metadata=...)`` updates each
namespace it names key by key, leaving the other namespaces as they were (as Ray's
``update_options`` does).

Refused, saying what to use instead: the Ray 2.x options this runtime does not
implement (``UNSUPPORTED``) and 0.5/0.6's ``checkpoint_interval`` (its
``__ray_save__``/``__ray_restore__`` protocol does not exist here; 0.7's
``ray.actor.Checkpointable`` does).
"""

from __future__ import annotations

import dataclasses
import difflib
import warnings
from typing import Any

from ray._private.runtime_env.validation import validate as _validate_runtime_env

INFINITE = -1

_ALIASES = {
    "num_return_vals": "num_returns",
    "max_reconstructions": "max_restarts",
}
# Options this runtime does not implement: refused, saying what to use instead
# (accepting them would silently schedule, stream or lose state differently from what was
# asked).
UNSUPPORTED = {
    "checkpoint_interval": (
        "The option 'checkpoint_interval' (Ray 0.5/0.6: save the actor every N calls with "
        "its __ray_save__/__ray_restore__ methods) is not supported. To keep an actor's "
        "state across restarts, set max_restarts (e.g. @ray.remote(max_restarts=-1)) and "
        "subclass ray.actor.Checkpointable: its should_checkpoint(ctx) decides when (every N "
        "calls: return ctx.num_tasks_since_last_checkpoint >= N), save_checkpoint stores the "
        "state and load_checkpoint restores it when the actor restarts."),
    "label_selector": (
        "The option 'label_selector' is not supported: nodes here carry no labels, so no "
        "selector could match. Give the nodes you mean a custom resource instead (`ray "
        "start --resources='{\"my_label\": 1000}'`, or Cluster.add_node(resources=...)) "
        "and request a sliver of it: resources={\"my_label\": 0.001}."),
}
# Streaming backpressure works for remote functions; actor methods stream without it.
ACTOR_UNSUPPORTED = {
    "_generator_backpressure_num_objects": (
        "The option '_generator_backpressure_num_objects' is supported for remote functions "
        "(tasks) only here: an actor's generator methods stream without pausing. Move the "
        "generator into a remote function, or bound the producer with a "
        "ray.util.queue.Queue(maxsize=N), whose put blocks while it is full."),
}
# Generators' num_returns (Ray 2.x): refs streamed as the task yields, or one ref to the
# list of refs the task yielded (``num_returns="dynamic"``).
STREAMING, DYNAMIC = "streaming", "dynamic"
# Resource quantities have 4 decimal places (Ray's fixed point): finer fractions are
# rejected, and a quantity is cut to that precision.
_RESOURCE_UNIT = 10_000


class _Option:
    """One keyword's type and value rule, with Ray's error messages."""

    __slots__ = ("types", "check")

    def __init__(self, types: tuple, check=None):
        self.types = types
        self.check = check  # value -> error message or None

    def validate(self, keyword: str, value: Any) -> None:
        if not isinstance(value, self.types):
            raise TypeError(f"The type of keyword '{keyword}' must be {self.types}, but "
                            f"received type {type(value)}")
        if self.check is not None:
            message = self.check(value)
            if message:
                raise ValueError(message)


def _counting(name: str, infinite: bool = True) -> _Option:
    if infinite:
        return _Option((int, type(None)), lambda x: None if x is None or x >= -1 else (
            f"The keyword '{name}' only accepts None, 0, -1 or a positive integer, "
            "where -1 represents infinity."))
    return _Option((int, type(None)), lambda x: None if x is None or x >= 0 else (
        f"The keyword '{name}' only accepts None, 0 or a positive integer."))


def _quantity_error(name: str, quantity: float) -> str | None:
    if quantity < 0:
        return f"The quantity of resource {name} cannot be negative"
    if isinstance(quantity, float) and quantity != 0.0 and int(quantity * _RESOURCE_UNIT) == 0:
        return (f"The precision of the fractional quantity of resource {name} cannot go "
                "beyond 0.0001")
    return None


def _resource(name: str) -> _Option:
    return _Option((float, int, type(None)),
                   lambda x: None if x is None else _quantity_error(name, x))


def _resources_error(resources: dict | None) -> str | None:
    if resources is None:
        return None
    if "CPU" in resources or "GPU" in resources:
        return ("Use the 'num_cpus' and 'num_gpus' keyword instead of 'CPU' and 'GPU' in "
                "'resources' keyword")
    for name, quantity in resources.items():
        if not isinstance(quantity, int | float) or isinstance(quantity, bool):
            return f"The quantity of resource {name} must be a number, got {quantity!r}"
        error = _quantity_error(name, quantity)
        if error:
            return error
    return None


def _metadata(value: dict | None) -> dict[str, dict] | None:
    """``_metadata`` checked (namespace name -> dict of that library's settings) and
    copied one level deep, so the caller changing its dicts later changes nothing here."""
    if value is None:
        return None
    for namespace, settings in value.items():
        if not isinstance(namespace, str):
            raise TypeError(f"_metadata maps a library's namespace (a string) to a dict of its "
                            f"settings, e.g. {{'my_lib': {{'key': 1}}}}; got the key "
                            f"{namespace!r} ({type(namespace).__name__})")
        if not isinstance(settings, dict):
            raise TypeError(f"_metadata maps a library's namespace (a string) to a dict of its "
                            f"settings, e.g. {{'my_lib': {{'key': 1}}}}; the namespace "
                            f"{namespace!r} maps to {settings!r} "
                            f"({type(settings).__name__})")
    return {namespace: dict(settings) for namespace, settings in value.items()}


def _merged_metadata(base: dict | None, new: dict | None) -> dict | None:
    """``.options(_metadata=new)`` over ``base``: each namespace of ``new`` updated key by
    key, the others kept (Ray's ``update_options``)."""
    if base is None or new is None:
        return new
    merged = dict(base)
    for namespace, settings in new.items():
        merged[namespace] = {**base.get(namespace, {}), **settings}
    return merged


def _is_exception_type(x: Any) -> bool:
    return isinstance(x, type) and issubclass(x, Exception)


def _num_returns_error(x: Any) -> str | None:
    if x is None or x in (STREAMING, DYNAMIC) or (isinstance(x, int) and x >= 0):
        return None
    return ("Default None. When None is passed, The default value is 1 for a task and actor "
            "task, and 'streaming' for generator tasks and generator actor tasks. The "
            "keyword 'num_returns' only accepts None, a non-negative integer, 'streaming' "
            "(for generators), or 'dynamic'. 'dynamic' flag will be deprecated in the "
            "future, and it is recommended to use 'streaming' instead.")


_COMMON = {
    "accelerator_type": _Option((str, type(None))),
    "memory": _resource("memory"),
    "name": _Option((str, type(None))),
    "num_cpus": _resource("num_cpus"),
    "num_gpus": _resource("num_gpus"),
    "resources": _Option((dict, type(None)), _resources_error),
    "runtime_env": _Option((dict, type(None))),
    "placement_group_bundle_index": _Option((int,)),
    "placement_group_capture_child_tasks": _Option((bool, type(None))),
    "enable_task_events": _Option((bool,)),
    "num_custom_resource": _resource("num_custom_resource"),
    "_metadata": _Option((dict, type(None))),
}
_TASK = {
    **_COMMON,
    "max_calls": _counting("max_calls", infinite=False),
    "max_retries": _counting("max_retries"),
    "num_returns": _Option((int, str, type(None)), _num_returns_error),
    "object_store_memory": _Option((int, type(None)), lambda x: None if x is None else (
        "Setting 'object_store_memory' is not implemented for tasks")),
    "retry_exceptions": _Option((bool, list, tuple), lambda x: None if isinstance(x, bool) or all(
        _is_exception_type(e) for e in x) else (
        "retry_exceptions must be either a boolean or a list of exceptions")),
    "_generator_backpressure_num_objects": _Option((int, type(None)), lambda x: None if (
        x is None or x == -1 or x > 0) else (
        "_generator_backpressure_num_objects must be a positive integer (how many values a "
        "streaming generator task may yield ahead of its caller), or -1 / None for no "
        "limit")),
}
_ACTOR = {
    **_COMMON,
    "lifetime": _Option((str, type(None)), lambda x: None if x in (
        None, "detached", "non_detached") else (
        "actor `lifetime` argument must be one of 'detached', 'non_detached' and 'None'.")),
    "max_concurrency": _counting("max_concurrency", infinite=False),
    "max_restarts": _counting("max_restarts"),
    "max_task_retries": _counting("max_task_retries"),
    "namespace": _Option((str, type(None))),
    "object_store_memory": _counting("object_store_memory", infinite=False),
    "get_if_exists": _Option((bool,)),
    "concurrency_groups": _Option((dict, list, tuple, type(None))),
}


def _concurrency_groups(groups) -> dict[str, int] | None:
    """``concurrency_groups={"io": 2, "compute": 4}`` (Ray also takes a list of names,
    each of size 1): group name -> how many of its calls may run at once."""
    if groups is None:
        return None
    if isinstance(groups, list | tuple):
        groups = {name: 1 for name in groups}
    for name, size in groups.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"concurrency_groups: group names must be non-empty strings, got "
                            f"{name!r}")
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise ValueError(f"concurrency_groups: the size of group {name!r} must be a "
                             f"positive integer (how many of its calls may run at once), got "
                             f"{size!r}")
    return dict(groups) or None


def check_method_option(keyword: str, value: Any) -> Any:
    """An actor method's ``retry_exceptions`` / ``max_task_retries`` (``@ray.method`` and
    a call's ``.options()``), checked as Ray checks them; the value to keep (exception
    lists become tuples)."""
    table = _TASK if keyword == "retry_exceptions" else _ACTOR
    table[keyword].validate(keyword, value)
    if keyword == "retry_exceptions" and not isinstance(value, bool):
        return tuple(value)
    return value


def _check_flag(name: str, value) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")


def _quantize(value: float) -> float:
    """A quantity cut to Ray's 4 decimal places (whole numbers stay ints)."""
    if isinstance(value, int) or value == int(value):
        return value
    return int(value * _RESOURCE_UNIT + 1e-6) / _RESOURCE_UNIT


def _shape(num_cpus, num_gpus, resources, default_cpus, memory=None,
           accelerator_type=None) -> dict[str, float]:
    shape = {"CPU": default_cpus if num_cpus is None else num_cpus}
    if num_gpus:
        shape["GPU"] = num_gpus
    shape.update(resources or {})
    if memory:
        shape["memory"] = memory
    if accelerator_type:
        # As Ray: a node with that accelerator advertises "accelerator_type:<T>": 1; a
        # task takes a sliver of it, so any number of tasks fit there.
        shape[f"accelerator_type:{accelerator_type}"] = 0.001
    return {k: _quantize(v) for k, v in shape.items() if v}


def _placed(opts, base: dict[str, float], what: str) -> dict[str, float]:
    """``base`` rewritten for a placement-group strategy (other strategies keep it)."""
    from ray._private.strategies import PlacementGroupSchedulingStrategy, effective_strategy

    strategy = effective_strategy(opts)
    object.__setattr__(opts, "_strategy", strategy)
    if isinstance(strategy, PlacementGroupSchedulingStrategy):
        return strategy.shape_in_group(base, what)
    return base


def _normalize(where: str, table: dict[str, _Option], valid: set[str],
               kwargs: dict[str, Any], *, in_options: bool) -> dict[str, Any]:
    out = {}
    for key, value in kwargs.items():
        key = _ALIASES.get(key, key)
        if key in UNSUPPORTED:
            raise ValueError(UNSUPPORTED[key])
        if table is _ACTOR and key in ACTOR_UNSUPPORTED:
            raise ValueError(ACTOR_UNSUPPORTED[key])
        if key not in valid:
            hint = difflib.get_close_matches(key, sorted(valid | set(_ALIASES)), n=1)
            raise ValueError(
                f"Invalid option keyword {key} for {where}. Valid ones are "
                f"{sorted(valid)}." + (f" Did you mean {hint[0]!r}?" if hint else ""))
        option = table.get(key)
        if option is not None:
            option.validate(key, value)
        if key == "runtime_env":
            value = _validate_runtime_env(value)
        elif key == "_metadata":
            value = _metadata(value)
        elif key == "retry_exceptions" and not isinstance(value, bool):
            value = tuple(value)
        out[key] = value
    if in_options and "max_calls" in out:
        raise ValueError("Setting 'max_calls' is not supported in '.options()'.")
    custom = out.pop("num_custom_resource", None)
    if custom:  # 0.2.2's single custom resource (ray.init(num_custom_resource=) names it)
        out["resources"] = {**(out.get("resources") or {}), "CustomResource": custom}
    return out


@dataclasses.dataclass(frozen=True)
class TaskOptions:
    # None: 1, or "streaming" for a generator function (RemoteFunction resolves it).
    num_returns: int | str | None = None
    num_cpus: float | None = None
    num_gpus: float | None = None
    resources: dict | None = None
    # Bytes of the node's "memory" resource the task reserves while it runs.
    memory: float | None = None
    # Run on a node with this accelerator ("accelerator_type:<T>" resource).
    accelerator_type: str | None = None
    max_calls: int = 0
    max_retries: int = 3
    # Retry the task when it raises: True (any exception), or only these exception types.
    retry_exceptions: bool | tuple = False
    name: str | None = None
    # Validated local form (ray._private.runtime_env); packed on first submission.
    runtime_env: dict | None = None
    # Ray 2.x placement: "DEFAULT", "SPREAD", or a strategy from ray.util.scheduling_strategies;
    # the placement_group* fields are the Ray 1.x spelling of PlacementGroupSchedulingStrategy.
    scheduling_strategy: Any = None
    placement_group: Any = None
    placement_group_bundle_index: int = -1
    placement_group_capture_child_tasks: bool | None = None
    # False: the task's state transitions are not recorded (ray.util.state omits it).
    enable_task_events: bool = True
    # A streaming generator task pauses while this many of its values are not taken by
    # its caller (Ray's name; None or -1: it never pauses).
    _generator_backpressure_num_objects: int | None = None
    # Libraries' settings by namespace, kept for them to read back (see the module doc).
    _metadata: dict | None = None

    @classmethod
    def from_kwargs(cls, kwargs: dict, base: TaskOptions | None = None) -> TaskOptions:
        valid = {f.name for f in dataclasses.fields(cls)} | {"num_custom_resource",
                                                             "object_store_memory"}
        fields = _normalize("remote functions", _TASK, valid, kwargs,
                            in_options=base is not None)
        fields.pop("object_store_memory", None)  # only None gets here
        if fields.get("max_calls") is None:
            fields.pop("max_calls", None)
        if "max_retries" in fields and fields["max_retries"] is None:
            fields.pop("max_retries")
        if base is not None and "_metadata" in fields:
            fields["_metadata"] = _merged_metadata(base._metadata, fields["_metadata"])
        opts = dataclasses.replace(base or cls(), **fields)
        opts.validate()
        return opts

    def validate(self) -> None:
        _check_flag("enable_task_events", self.enable_task_events)
        self.resource_shape()  # checks the strategy (and that the task fits its bundle)

    def generator_backpressure(self) -> int:
        """How many unconsumed values pause a streaming task (0: it never pauses)."""
        n = self._generator_backpressure_num_objects
        return 0 if n is None or n < 0 else n

    def returns_for(self, is_generator: bool) -> int | str:
        """The effective num_returns of a function (None: 1, or streaming for generators)."""
        n = self.num_returns
        if n is None:
            return STREAMING if is_generator else 1
        if n in (STREAMING, DYNAMIC) and not is_generator:
            raise ValueError(
                f"num_returns='{n}' can only be used with generator functions (functions "
                "that use 'yield'). The decorated function is not a generator function.")
        return n

    def retries_on(self, error: BaseException) -> bool:
        """Whether ``retry_exceptions`` covers an exception the task raised."""
        which = self.retry_exceptions
        if which is True:
            return isinstance(error, Exception)
        return isinstance(which, tuple) and isinstance(error, which)

    def resource_shape(self) -> dict[str, float]:
        cached = self.__dict__.get("_shape")
        if cached is None:
            from ray._private.strategies import strategy_key

            base = _shape(self.num_cpus, self.num_gpus, self.resources, 1, self.memory,
                          self.accelerator_type)
            cached = _placed(self, base, "The task")
            object.__setattr__(self, "_shape", cached)
            object.__setattr__(self, "_shape_key", tuple(sorted(cached.items()))
                               + strategy_key(self.__dict__["_strategy"]))
        return cached

    def strategy(self):
        """The effective scheduling strategy (None: default)."""
        self.resource_shape()
        return self.__dict__["_strategy"]

    def shape_key(self) -> tuple:
        self.resource_shape()
        return self.__dict__["_shape_key"]


@dataclasses.dataclass(frozen=True)
class ActorOptions:
    num_cpus: float | None = None
    num_gpus: float | None = None
    resources: dict | None = None
    memory: float | None = None
    accelerator_type: str | None = None
    max_restarts: int = 0
    max_task_retries: int = 0
    max_concurrency: int | None = None
    name: str | None = None
    namespace: str | None = None
    lifetime: str | None = None
    runtime_env: dict | None = None
    scheduling_strategy: Any = None
    placement_group: Any = None
    placement_group_bundle_index: int = -1
    placement_group_capture_child_tasks: bool | None = None
    # The default of its creation task and methods (``@ray.method(enable_task_events=)``
    # and a method's ``.options()`` override it per method / per call).
    enable_task_events: bool = True
    # ``.options(name=..., get_if_exists=True).remote()``: the live actor of that name if
    # there is one (its constructor is not run again), else a new one.
    get_if_exists: bool = False
    # Group name -> size: calls of a group run on its own threads (or event loop) with at
    # most that many at once; ``@ray.method(concurrency_group=)`` or the call's
    # ``.options(concurrency_group=)`` picks the group, others use the default group.
    concurrency_groups: dict | None = None
    # Libraries' settings by namespace, kept for them to read back (see the module doc).
    _metadata: dict | None = None

    @classmethod
    def from_kwargs(cls, kwargs: dict, base: ActorOptions | None = None) -> ActorOptions:
        valid = {f.name for f in dataclasses.fields(cls)} | {"num_custom_resource",
                                                             "object_store_memory"}
        fields = _normalize("actors", _ACTOR, valid, kwargs, in_options=base is not None)
        if fields.pop("object_store_memory", None) is not None:
            warnings.warn(
                "Setting 'object_store_memory' for actors is deprecated since it doesn't "
                "actually reserve the required object store memory (as in Ray 2.x); objects "
                "that do not fit spill to disk instead.", DeprecationWarning, stacklevel=3)
        for key in ("max_restarts", "max_task_retries"):
            if key in fields and fields[key] is None:
                fields.pop(key)
        if base is not None and "_metadata" in fields:
            fields["_metadata"] = _merged_metadata(base._metadata, fields["_metadata"])
        opts = dataclasses.replace(base or cls(), **fields)
        opts.validate()
        return opts

    def validate(self) -> None:
        _check_flag("enable_task_events", self.enable_task_events)
        _check_flag("get_if_exists", self.get_if_exists)
        if self.get_if_exists and not self.name:
            raise ValueError("The actor option get_if_exists=True needs a name: use "
                             ".options(name=..., get_if_exists=True).")
        object.__setattr__(self, "concurrency_groups",
                           _concurrency_groups(self.concurrency_groups))
        if self.max_concurrency is not None and self.max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.resource_shape()

    def resource_shape(self) -> dict[str, float]:
        # An actor holds its declared resources for its lifetime; by default it
        # needs one CPU to be placed but holds none while alive (Ray's default).
        return _placed(self, _shape(self.num_cpus, self.num_gpus, self.resources, 0,
                                    self.memory, self.accelerator_type), "The actor")

    def strategy(self):
        self.resource_shape()
        return self.__dict__["_strategy"]

    def placement_shape(self) -> dict[str, float]:
        """What the cluster must hold for the actor to be placed (empty inside a
        placement group: the group's bundles are checked instead)."""
        shape = self.resource_shape()
        if self.__dict__["_strategy"] is not None and any("_group_" in k for k in shape):
            return {}
        if self.num_cpus is None:
            shape.setdefault("CPU", 1)
        return shape
