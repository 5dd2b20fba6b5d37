"""Values to bytes and back, on top of plasma's pickle-5 serializer.

Adds what ray needs: errors travel as values with their own metadata so
``ray.get`` re-raises them; ObjectRefs nested inside values are collected while
pickling so their owner can keep them alive; tiny primitives skip the framing.
"""

from __future__ import annotations

import io
import logging
import pickle
import threading
import traceback
from typing import Any

from plasma import serialization as _plasma_ser
from plasma.errors import SerializationError as _SerializationError
from ray.cloudpickle._inspect import inspect_serializability
from ray.exceptions import RayTaskError, UnserializableException

logger = logging.getLogger(__name__)

ERROR_METADATA = b"RAY_ERROR"
PICKLE_METADATA = b"RAY_PICKLE"  # plain pickle bytes, no out-of-band buffers

_PRIMITIVES = (type(None), bool, int, float, str, bytes)
_tls = threading.local()


def collecting_refs():
    return getattr(_tls, "refs", None)


class _Collector:
    def __enter__(self):
        self.outer = getattr(_tls, "refs", None)
        self.refs = []
        _tls.refs = self.refs
        return self.refs

    def __exit__(self, *exc):
        _tls.refs = self.outer


def serialize(value):
    """Return (serialized_object, contained_refs). ``serialized_object`` has
    .metadata, .total_bytes, .write_to(buf) and .to_bytes()."""
    if type(value) in _PRIMITIVES:
        return _Small(PICKLE_METADATA, pickle.dumps(value, protocol=5)), ()
    with _Collector() as refs:
        try:
            ser = _plasma_ser.serialize(value)  # raises SerializationError naming the culprit
        except _SerializationError as exc:
            raise _SerializationError(
                f"{exc}. Make that object picklable (e.g. give its class __reduce__), keep "
                "it out of values passed to or returned from tasks, or register a "
                "serializer: ray.util.register_serializer(cls, serializer=..., "
                "deserializer=...)."
            ) from exc.__cause__
    return ser, refs


def serializability_report(value: Any, error: BaseException | None = None) -> str:
    """What ``ray.util.inspect_serializability`` says about ``value`` (which captured
    variable or attribute cannot be pickled), for serialization errors (Ray's text), with
    the pickler's own error (``error``: it names the attribute path) and the fixes inside
    the report's closing rule."""
    report = io.StringIO()
    inspect_serializability(value, print_file=report)
    text = report.getvalue().rstrip("\n")
    if error is None:
        return text + "\n"
    body, _, rule = text.rpartition("\n")
    said = str(error)
    if "register_serializer" not in said:
        said += (". To fix it: make that object picklable (e.g. give its class __reduce__), "
                 "create it inside the function or actor instead of capturing it, or "
                 "register a serializer: ray.util.register_serializer(cls, serializer=..., "
                 "deserializer=...)")
    return f"{body}\nThe pickler said: {said}\n{rule}\n"


def serialize_error(error: BaseException):
    """An error as a stored value: the error pickled (serializers registered with
    ``ray.util.register_serializer`` apply, as to any value) and its text, so a reader
    that cannot unpickle it still gets ``UnserializableException(text)``."""
    text = "".join(traceback.format_exception_only(type(error), error)).rstrip("\n")
    try:
        inner = _plasma_ser.serialize(error)
        blob: list[Any] = [inner.metadata, inner.to_bytes(), text]
    except Exception:  # noqa: BLE001 - unpicklable error: its readers get the text
        blob = [None, None, text]
    return _Small(ERROR_METADATA, pickle.dumps(blob, protocol=5))


def deserialize(metadata: bytes, data):
    """Return the value; raise if the stored value is an error (a failed task's
    ``RayTaskError`` is raised as an instance of its cause's class too, as in Ray)."""
    if metadata == PICKLE_METADATA:
        return pickle.loads(data)
    if metadata == ERROR_METADATA:
        err = load_error(data)
        if type(err) is RayTaskError:
            raise err.as_instanceof_cause()
        raise err
    return _plasma_ser.deserialize(data, metadata)


def is_error(metadata: bytes) -> bool:
    return metadata == ERROR_METADATA


def load_error(data) -> BaseException:
    """The stored error, or ``UnserializableException`` with its text when it cannot be
    unpickled here (its class or its arguments do not load in this process)."""
    inner_metadata, inner, text = pickle.loads(data)
    if inner is not None:
        try:
            return _plasma_ser.deserialize(inner, inner_metadata)
        except Exception:  # noqa: BLE001 - reported as UnserializableException below
            logger.debug("could not unpickle a stored error", exc_info=True)
    return UnserializableException(text)


class _Small:
    """A serialized value that is just bytes (primitives and errors)."""

    __slots__ = ("metadata", "data")

    def __init__(self, metadata: bytes, data: bytes):
        self.metadata = metadata
        self.data = data

    @property
    def total_bytes(self) -> int:
        return len(self.data)

    def write_to(self, dest) -> None:
        dest[: len(self.data)] = self.data

    def to_bytes(self) -> bytes:
        return self.data
