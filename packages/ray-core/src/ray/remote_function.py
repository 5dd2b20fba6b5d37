"""``@ray.remote`` on a function: a RemoteFunction with ``.remote()`` and ``.options()``."""

from __future__ import annotations

import functools
import inspect

from ray._private import runtime as _runtime
from ray._private.options import TaskOptions


class RemoteFunction:
    def __init__(self, function, options: TaskOptions):
        if inspect.iscoroutinefunction(function):
            raise TypeError(
                f"{function.__qualname__} is an async function; remote functions must be "
                "regular functions (async def is supported for actor methods)."
            )
        self._function = function
        self._options = options
        self._name = f"{function.__module__}.{function.__qualname__}"
        self._function_id: bytes | None = None
        self._exported_to = None  # the runtime the id belongs to
        functools.update_wrapper(self, function)

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
        return self._submit(self._options, args, kwargs)

    def options(self, **kwargs) -> _BoundOptions:
        return _BoundOptions(self, TaskOptions.from_kwargs(kwargs, self._options))

    def _submit(self, opts: TaskOptions, args, kwargs):
        rt = _runtime.current()
        if self._exported_to is not rt:
            self._function_id = rt.export_function(self._function)
            self._exported_to = rt
        refs = rt.submit_task(self._function_id, self._name, args, kwargs, opts)
        if opts.num_returns == 1:
            return refs[0]
        if opts.num_returns == 0:
            return None
        return refs


class _BoundOptions:
    """What ``f.options(...)`` returns: ``.remote()`` with the overridden options."""

    def __init__(self, fn: RemoteFunction, opts: TaskOptions):
        self._fn = fn
        self._opts = opts

    def remote(self, *args, **kwargs):
        return self._fn._submit(self._opts, args, kwargs)

    def options(self, **kwargs):
        return _BoundOptions(self._fn, TaskOptions.from_kwargs(kwargs, self._opts))
