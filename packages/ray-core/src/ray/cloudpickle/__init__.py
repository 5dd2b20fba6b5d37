"""``ray.cloudpickle``: the pickler ray uses for functions, classes and values.

Ray 2.x ships a vendored copy of cloudpickle under this name; this project builds on
the installed ``cloudpickle`` package (a declared dependency of ray-core). One
difference is kept from Ray's copy: code objects keep their file name (upstream
writes ``<dynamic-code>`` to make payloads byte-identical across files), so the
traceback of a function pickled here shows its source lines wherever the file
exists. ``from ray import cloudpickle`` and ``ray.cloudpickle.dumps(obj, protocol=5,
buffer_callback=...)`` work as in Ray; ``dumps_debug``/``dump_debug`` say how to find
the captured variable that cannot be pickled when pickling fails.
"""

from __future__ import annotations

import io
import os
import types
from collections import ChainMap
from pickle import PicklingError

import cloudpickle as _cloudpickle
from cloudpickle import cloudpickle as _impl
from cloudpickle import (  # noqa: F401 - re-exported
    load,
    loads,
    register_pickle_by_value,
    unregister_pickle_by_value,
)

__version__ = _cloudpickle.__version__
_ANONYMOUS_FILENAME = "<dynamic-code>"


def _code_reduce_keeping_filename(code: types.CodeType):
    constructor, args = _impl._code_reduce(code)
    return constructor, tuple(code.co_filename if isinstance(a, str) and a == _ANONYMOUS_FILENAME
                              else a for a in args)


class CloudPickler(_cloudpickle.CloudPickler):
    """cloudpickle's pickler; code objects keep their ``co_filename``."""

    dispatch_table = ChainMap({types.CodeType: _code_reduce_keeping_filename},
                              _cloudpickle.CloudPickler.dispatch_table)


# The convention of pickle libraries: the Pickler subclass under the name "Pickler".
Pickler = CloudPickler


def dumps(obj, protocol: int | None = None, buffer_callback=None) -> bytes:
    """Pickle ``obj`` (functions and classes by value where they are not importable)."""
    with io.BytesIO() as file:
        CloudPickler(file, protocol=protocol, buffer_callback=buffer_callback).dump(obj)
        return file.getvalue()


def dump(obj, file, protocol: int | None = None, buffer_callback=None) -> None:
    """Pickle ``obj`` into the open binary ``file``."""
    CloudPickler(file, protocol=protocol, buffer_callback=buffer_callback).dump(obj)


_VERBOSE_ENV = "RAY_PICKLE_VERBOSE_DEBUG"


def _explained(obj, call: str, exc: BaseException) -> BaseException:
    """The same error type, with a message that says how to find the culprit (with
    ``RAY_PICKLE_VERBOSE_DEBUG`` set, the inspection report is printed first)."""
    if os.environ.get(_VERBOSE_ENV):
        from ray.cloudpickle._inspect import inspect_serializability

        inspect_serializability(obj)
    message = (
        f"{call}({obj!s}) failed: {exc}\nTo check which non-serializable variables are "
        f"captured in scope, re-run the script with '{_VERBOSE_ENV}=1' or call "
        "ray.util.inspect_serializability(obj)."
    )
    try:
        return type(exc)(message)
    except TypeError:  # an error class whose constructor wants other arguments
        return PicklingError(message)


def dumps_debug(obj, *args, **kwargs) -> bytes:
    """``dumps``; on failure the error says how to find what cannot be pickled."""
    try:
        return dumps(obj, *args, **kwargs)
    except (TypeError, PicklingError) as exc:
        raise _explained(obj, "ray.cloudpickle.dumps", exc) from exc


def dump_debug(obj, file, *args, **kwargs) -> None:
    """``dump`` with the error explanation of :func:`dumps_debug`."""
    try:
        dump(obj, file, *args, **kwargs)
    except (TypeError, PicklingError) as exc:
        raise _explained(obj, "ray.cloudpickle.dump", exc) from exc


__all__ = [
    "CloudPickler",
    "Pickler",
    "dump",
    "dump_debug",
    "dumps",
    "dumps_debug",
    "load",
    "loads",
    "register_pickle_by_value",
    "unregister_pickle_by_value",
]
