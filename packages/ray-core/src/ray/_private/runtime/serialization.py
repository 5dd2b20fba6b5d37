"""Values to bytes and back, on top of plasma's pickle-5 serializer.

Adds what ray needs: errors travel as values with their own metadata so
``ray.get`` re-raises them; ObjectRefs nested inside values are collected while
pickling so their owner can keep them alive; tiny primitives skip the framing.
"""

from __future__ import annotations

import pickle
import threading

import cloudpickle

from plasma import serialization as _plasma_ser
from plasma.errors import SerializationError as _SerializationError

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


def serialize_error(error: BaseException):
    try:
        data = cloudpickle.dumps(error)
    except Exception:
        from ray.exceptions import RayError

        data = cloudpickle.dumps(RayError(f"{type(error).__name__}: {error}"))
    return _Small(ERROR_METADATA, data)


def deserialize(metadata: bytes, data):
    """Return the value; raise if the stored value is an error."""
    if metadata == PICKLE_METADATA:
        return pickle.loads(data)
    if metadata == ERROR_METADATA:
        err = pickle.loads(data)
        raise err
    return _plasma_ser.deserialize(data, metadata)


def is_error(metadata: bytes) -> bool:
    return metadata == ERROR_METADATA


def load_error(data) -> BaseException:
    return pickle.loads(data)


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
