"""``@ray.remote`` on a function: a RemoteFunction with ``.remote()`` and ``.options()``.

``.remote(...)`` binds its arguments to the function's signature first (``TypeError``
at the call, as in Ray), starts Ray if nothing has (auto-init), and returns one
ObjectRef, a list of them (``num_returns=N``), None (``num_returns=0``), or for a
generator function an ``ObjectRefGenerator`` (``num_returns="streaming"``, the default
for generators) or one ref to a ``DynamicObjectRefGenerator`` (``"dynamic"``).

``.bind()`` (Ray DAGs) raises ``UnsupportedFeatureError``, as it does on actor classes
and methods: Ray DAGs and Serve are not part of this project.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect

from ray._private.api import connected_runtime
from ray._private.options import STREAMING, TaskOptions
from ray._private.signatures import CallSignature
from ray.exceptions import UnsupportedFeatureError


def dag_unsupported(call: str, instead: str) -> UnsupportedFeatureError:
    """The error of ``<call>.bind(...)``, saying to call ``instead`` (a ``.remote()``)."""
    return UnsupportedFeatureError(
        f"{call}.bind(): Ray DAGs (ray.dag, workflows, Ray Serve deployment graphs, compiled "
        f"graphs) are not part of this project, so nothing can be bound. Call {instead} "
        "instead; to chain calls, pass the ObjectRef it returns as an argument of the next "
        ".remote().")


class RemoteFunction:
    def __init__(self, function, options: TaskOptions):
        if inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function):
            raise ValueError(
                f"'async def' should not be used for remote tasks ({function.__qualname__}). "
                "You can wrap the async function with `asyncio.run(f())`; async methods "
                "work on actors (see Ray's async actor docs).")
        self._function = function
        self._is_generator = inspect.isgeneratorfunction(function)
        self._options = self._resolved(options)
        self._name = f"{function.__module__}.{function.__qualname__}"
        self._signature = CallSignature.of(function)
        # Ray's hook for libraries: wraps the call ``invocation(args, kwargs) -> refs``.
        self._decorator = getattr(function, "__ray_invocation_decorator__", None)
        self._function_id: bytes | None = None
        self._exported_to = None  # the runtime the id belongs to
        functools.update_wrapper(self, function)

    def _resolved(self, opts: TaskOptions) -> TaskOptions:
        """``opts`` with its num_returns made concrete for this function (done once per
        options object, so ``.remote()`` reads a plain value)."""
        n = opts.returns_for(self._is_generator)
        return opts if n == opts.num_returns else dataclasses.replace(opts, num_returns=n)

    def __getstate__(self):
        # Captured by another remote function (e.g. a local one calling a module-level
        # one): the export belongs to this process's runtime, not to the receiver.
        return {**self.__dict__, "_function_id": None, "_exported_to": None}

    def __call__(self, *args, **kwargs):
        raise TypeError(
            f"Remote function {self._function.__qualname__} cannot be called directly: use "
            f"{self._function.__name__}.remote(...) (or .options(...).remote(...))."
        )

    def remote(self, *args, **kwargs):
        return self._call(self._options, args, kwargs)

    def options(self, **kwargs) -> _BoundOptions:
        return _BoundOptions(self, self._resolved(TaskOptions.from_kwargs(kwargs, self._options)))

    def bind(self, *args, **kwargs):
        raise dag_unsupported(self._function.__name__, f"{self._function.__name__}.remote(...)")

    def _remote(self, args=None, kwargs=None, **options):
        """``f._remote(args=[...], kwargs={...}, **options)`` (used by libraries): the same
        as ``f.options(**options).remote(*args, **kwargs)``."""
        opts = self._resolved(TaskOptions.from_kwargs(options, self._options)) if options \
            else self._options
        return self._call(opts, tuple(args or ()), dict(kwargs or {}))

    def _call(self, opts: TaskOptions, args, kwargs):
        if self._decorator is not None:
            return self._decorator(
                lambda a, k: self._submit(opts, tuple(a), dict(k or {})))(args, kwargs)
        return self._submit(opts, args, kwargs)

    def _submit(self, opts: TaskOptions, args, kwargs):
        if self._signature is not None:
            self._signature.check(args, kwargs, f"{self._function.__qualname__}.remote()")
        rt = connected_runtime()
        if self._exported_to is not rt:
            self._function_id = rt.export_function(self._function)
            self._exported_to = rt
        refs = rt.submit_task(self._function_id, self._name, args, kwargs, opts)
        n = opts.num_returns
        if n == 1:
            return refs[0]
        if n == 0:
            return None
        if n == STREAMING:
            return refs[0]  # the runtime hands back the ObjectRefGenerator itself
        if isinstance(n, str):  # "dynamic": one ref to a DynamicObjectRefGenerator
            return refs[0]
        return refs


class _BoundOptions:
    """What ``f.options(...)`` returns: ``.remote()`` with the overridden options."""

    def __init__(self, fn: RemoteFunction, opts: TaskOptions):
        self._fn = fn
        self._opts = opts

    def remote(self, *args, **kwargs):
        return self._fn._call(self._opts, args, kwargs)

    def options(self, **kwargs):
        return _BoundOptions(self._fn, self._fn._resolved(
            TaskOptions.from_kwargs(kwargs, self._opts)))

    def bind(self, *args, **kwargs):
        name = self._fn._function.__name__
        raise dag_unsupported(f"{name}.options(...)", f"{name}.options(...).remote(...)")
