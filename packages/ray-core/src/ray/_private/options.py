"""Typed options of remote functions and actors, validated once at the API boundary.

``@ray.remote(...)`` and ``.options(...)`` accept both the documented 0.7 names
and today's (``num_return_vals``/``num_returns``,
``max_reconstructions``/``max_restarts``); unknown keys raise a TypeError that
suggests the closest valid name. ``.options()`` is ``dataclasses.replace``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ray._private.runtime_env.validation import validate as _validate_runtime_env
from ray._private.suggest import unknown_keyword_error

INFINITE = -1

_ALIASES = {
    "num_return_vals": "num_returns",
    "max_reconstructions": "max_restarts",
}
# Accepted for compatibility; they have no effect on a single-version runtime.
_IGNORED = {"checkpoint_interval", "retry_exceptions", "_metadata", "num_custom_resource", "memory",
            "object_store_memory", "accelerator_type", "concurrency_groups", "label_selector",
            "get_if_exists", "enable_task_events", "_generator_backpressure_num_objects"}


def _check_resources(num_cpus, num_gpus, resources) -> None:
    for name, value in (("num_cpus", num_cpus), ("num_gpus", num_gpus)):
        if value is not None and (not isinstance(value, int | float) or isinstance(value, bool)
                                  or value < 0):
            raise ValueError(f"{name} must be a non-negative number, got {value!r}")
    for name, value in (resources or {}).items():
        if name in ("CPU", "GPU"):
            raise ValueError(
                f"Use num_cpus/num_gpus instead of resources={{{name!r}: ...}}."
            )
        if not isinstance(value, int | float) or value < 0:
            raise ValueError(f"Custom resource {name!r} must be a non-negative number")
        if value > 1 and value != int(value):
            raise ValueError(
                f"Custom resource {name!r}={value}: quantities above 1 must be whole numbers"
            )


def _shape(num_cpus, num_gpus, resources, default_cpus) -> dict[str, float]:
    shape = {"CPU": default_cpus if num_cpus is None else num_cpus}
    if num_gpus:
        shape["GPU"] = num_gpus
    shape.update(resources or {})
    return {k: v for k, v in shape.items() if v}


def _placed(opts, base: dict[str, float], what: str) -> dict[str, float]:
    """``base`` rewritten for a placement-group strategy (other strategies keep it)."""
    from ray._private.strategies import PlacementGroupSchedulingStrategy, effective_strategy

    strategy = effective_strategy(opts)
    object.__setattr__(opts, "_strategy", strategy)
    if isinstance(strategy, PlacementGroupSchedulingStrategy):
        return strategy.shape_in_group(base, what)
    return base


def _normalize(where: str, valid: set[str], kwargs: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in kwargs.items():
        key = _ALIASES.get(key, key)
        if key in _IGNORED:
            continue
        if key not in valid:
            raise unknown_keyword_error(where, key, valid | set(_ALIASES))
        out[key] = _validate_runtime_env(value) if key == "runtime_env" else value
    return out


@dataclasses.dataclass(frozen=True)
class TaskOptions:
    num_returns: int = 1
    num_cpus: float | None = None
    num_gpus: float | None = None
    resources: dict | None = None
    max_calls: int = 0
    max_retries: int = 3
    name: str | None = None
    # Validated local form (ray._private.runtime_env); packed on first submission.
    runtime_env: dict | None = None
    # Ray 2.x placement: "DEFAULT", "SPREAD", or a strategy from ray.util.scheduling_strategies;
    # the placement_group* fields are the Ray 1.x spelling of PlacementGroupSchedulingStrategy.
    scheduling_strategy: Any = None
    placement_group: Any = None
    placement_group_bundle_index: int = -1
    placement_group_capture_child_tasks: bool | None = None

    @classmethod
    def from_kwargs(cls, kwargs: dict, base: TaskOptions | None = None) -> TaskOptions:
        valid = {f.name for f in dataclasses.fields(cls)}
        fields = _normalize("@ray.remote (function)", valid, kwargs)
        opts = dataclasses.replace(base or cls(), **fields)
        opts.validate()
        return opts

    def validate(self) -> None:
        if not isinstance(self.num_returns, int) or self.num_returns < 0:
            raise ValueError(f"num_returns must be a non-negative int, got {self.num_returns!r}")
        if self.max_calls is None or self.max_calls < 0:
            raise ValueError("max_calls must be a non-negative int (0 means unlimited)")
        _check_resources(self.num_cpus, self.num_gpus, self.resources)
        self.resource_shape()  # checks the strategy (and that the task fits its bundle)

    def resource_shape(self) -> dict[str, float]:
        cached = self.__dict__.get("_shape")
        if cached is None:
            from ray._private.strategies import strategy_key

            base = _shape(self.num_cpus, self.num_gpus, self.resources, 1)
            cached = _placed(self, base, "The task")
            object.__setattr__(self, "_shape", cached)
            object.__setattr__(self, "_shape_key", tuple(sorted(cached.items()))
                               + strategy_key(self._strategy))
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

    @classmethod
    def from_kwargs(cls, kwargs: dict, base: ActorOptions | None = None) -> ActorOptions:
        valid = {f.name for f in dataclasses.fields(cls)}
        fields = _normalize("@ray.remote (actor class)", valid, kwargs)
        opts = dataclasses.replace(base or cls(), **fields)
        opts.validate()
        return opts

    def validate(self) -> None:
        _check_resources(self.num_cpus, self.num_gpus, self.resources)
        if self.lifetime not in (None, "detached", "non_detached"):
            raise ValueError(
                f"lifetime must be None, 'detached' or 'non_detached', got {self.lifetime!r}"
            )
        if self.max_concurrency is not None and self.max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        if self.max_restarts < -1 or self.max_task_retries < -1:
            raise ValueError("max_restarts/max_task_retries must be >= -1 (-1 = infinite)")
        self.resource_shape()

    def resource_shape(self) -> dict[str, float]:
        # An actor holds its declared resources for its lifetime; by default it
        # needs one CPU to be placed but holds none while alive (Ray's default).
        return _placed(self, _shape(self.num_cpus, self.num_gpus, self.resources, 0),
                       "The actor")

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
