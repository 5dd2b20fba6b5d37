"""Serialization: cloudpickle, pickle protocol 5, out-of-band buffers laid out for zero copy.

Layout of a serialized value (``metadata == METADATA_PICKLE5``)::

    offset 0   magic b"PL5\\0" | u32 buffer count | u64 pickle length
    16         (u64 offset, u64 length) per out-of-band buffer
    ...        the pickle stream
    aligned    each out-of-band buffer, at a 64-byte aligned offset

Buffers (numpy arrays, or anything implementing ``__reduce_ex__`` with
``PickleBuffer``) are copied by ``write_to`` straight from the value into the
destination, so a put costs one memcpy. ``deserialize`` hands the pickle slices
of the (read-only) source: numpy arrays come back read-only and pointing into it.

Hooks:

* ``register_serializer(cls, serializer=f, deserializer=g)``: instances of
  exactly ``cls`` are stored as ``g(f(obj))`` (``g`` travels with the data by
  value, so the reading process needs no registration);
* ``register_pickle_reducer(cls, reducer)``: ``reducer(obj)`` returns a
  ``__reduce__``-style tuple;
* ``serialize(value, on_object=cb, on_object_types=(T, ...))``: ``cb(obj)`` is
  called for every instance of those types met while pickling (Ray uses it to find
  the ObjectRefs nested in a value). If it returns a reduce tuple, that is used;
  if it returns None the object is pickled as usual. Objects met twice (shared
  references) are reported once.
"""

from __future__ import annotations

import io
import pickle
import struct
import threading
from collections.abc import Callable, Iterable
from typing import Any

import cloudpickle
import numpy as np

from plasma.allocator import ALIGNMENT, align_up
from plasma.errors import SerializationError

METADATA_PICKLE5 = b"PL5"
_MAGIC = b"PL5\x00"
_HEADER = struct.Struct("<4sIQ")
_EXTENT = struct.Struct("<QQ")
_PARALLEL_COPY_BYTES = 64 * 2**20


def _call_deserializer(deserializer, payload):
    return deserializer(payload)


class _Pickler(cloudpickle.Pickler):
    def __init__(self, file, context, buffer_callback, on_object, on_object_types):
        super().__init__(file, protocol=5, buffer_callback=buffer_callback)
        self._context = context
        self._on_object = on_object
        self._on_object_types = on_object_types

    def reducer_override(self, obj):
        if self._on_object_types and isinstance(obj, self._on_object_types):
            reduced = self._on_object(obj)
            if reduced is not None and reduced is not NotImplemented:
                return reduced
        reducer = self._context._reducers.get(type(obj))
        if reducer is not None:
            return reducer(obj)
        return super().reducer_override(obj)


class SerializedObject:
    """A value ready to be written: ``total_bytes`` to reserve, then ``write_to``."""

    __slots__ = ("metadata", "total_bytes", "_pickle", "_buffers", "_offsets", "_header")

    def __init__(self, pickled: bytes, buffers: list[memoryview]) -> None:
        self.metadata = METADATA_PICKLE5
        self._pickle = pickled
        self._buffers = buffers
        header_bytes = _HEADER.size + _EXTENT.size * len(buffers)
        position = header_bytes + len(pickled)
        self._offsets = []
        for buffer in buffers:
            position = align_up(position, ALIGNMENT)
            self._offsets.append(position)
            position += buffer.nbytes
        self.total_bytes = position
        header = bytearray(_HEADER.pack(_MAGIC, len(buffers), len(pickled)))
        for offset, buffer in zip(self._offsets, buffers):
            header += _EXTENT.pack(offset, buffer.nbytes)
        self._header = bytes(header)

    def write_to(self, dest) -> None:
        """Write into ``dest`` (writable, at least ``total_bytes`` long)."""
        dest = memoryview(dest).cast("B")
        if len(dest) < self.total_bytes:
            raise ValueError(f"destination holds {len(dest)} bytes, need {self.total_bytes}")
        start = len(self._header)
        dest[:start] = self._header
        dest[start : start + len(self._pickle)] = self._pickle
        if not self._buffers:
            return
        target = np.frombuffer(dest, dtype=np.uint8)
        for offset, buffer in zip(self._offsets, self._buffers):
            _copy(target[offset : offset + buffer.nbytes], np.frombuffer(buffer, dtype=np.uint8))

    def to_bytes(self) -> bytes:
        out = bytearray(self.total_bytes)
        self.write_to(out)
        return bytes(out)


def _copy(dest: np.ndarray, src: np.ndarray) -> None:
    """memcpy; large copies are split over two threads (numpy drops the GIL)."""
    if src.nbytes < _PARALLEL_COPY_BYTES:
        np.copyto(dest, src)
        return
    half = align_up(src.nbytes // 2, 4096)
    helper = threading.Thread(target=np.copyto, args=(dest[half:], src[half:]))
    helper.start()
    np.copyto(dest[:half], src[:half])
    helper.join()


class SerializationContext:
    """Custom serializers and reducers, by exact type."""

    def __init__(self) -> None:
        self._reducers: dict[type, Callable[[Any], tuple]] = {}

    def register_serializer(
        self, cls: type, *, serializer: Callable[[Any], Any], deserializer: Callable[[Any], Any]
    ) -> None:
        self._reducers[cls] = lambda obj: (_call_deserializer, (deserializer, serializer(obj)))

    def register_pickle_reducer(self, cls: type, reducer: Callable[[Any], tuple]) -> None:
        self._reducers[cls] = reducer

    def deregister(self, cls: type) -> None:
        self._reducers.pop(cls, None)

    def serialize(
        self,
        value: Any,
        *,
        on_object: Callable[[Any], Any] | None = None,
        on_object_types: Iterable[type] = (),
    ) -> SerializedObject:
        buffers: list[memoryview] = []

        def keep_out_of_band(pickle_buffer: pickle.PickleBuffer) -> bool:
            try:
                buffers.append(pickle_buffer.raw())
            except BufferError:  # not contiguous: let pickle copy it in-band
                return True
            return False

        stream = io.BytesIO()
        types = tuple(on_object_types)
        pickler = _Pickler(stream, self, keep_out_of_band, on_object, types)
        try:
            pickler.dump(value)
        except Exception as error:
            raise SerializationError(describe_unserializable(value, error)) from error
        return SerializedObject(stream.getvalue(), buffers)


def _aligned(view: memoryview) -> memoryview:
    """``view`` when it starts at an ALIGNMENT boundary (objects in the store do), else a
    read-only copy that does: buffers sit at aligned offsets, so arrays read from a value
    held in ordinary memory (a small value passed inline, in a ``bytes``) are aligned too."""
    src = np.frombuffer(view, dtype=np.uint8)
    if src.ctypes.data % ALIGNMENT == 0:
        return view
    raw = np.empty(len(src) + ALIGNMENT, dtype=np.uint8)
    start = -raw.ctypes.data % ALIGNMENT
    dest = raw[start : start + len(src)]
    dest[:] = src
    dest.flags.writeable = False
    return memoryview(dest)  # type: ignore[arg-type]  # ndarray has the buffer protocol


def deserialize(data, metadata: bytes = METADATA_PICKLE5) -> Any:
    """The value stored in ``data``; numpy arrays point into ``data`` (no copy)."""
    if bytes(metadata) != METADATA_PICKLE5:
        raise SerializationError(f"unknown serialization format {bytes(metadata)[:40]!r}")
    view = memoryview(data).cast("B")
    magic, count, pickle_bytes = _HEADER.unpack_from(view, 0)
    if magic != _MAGIC:
        raise SerializationError("data is not a plasma-serialized value (bad magic)")
    position = _HEADER.size
    buffers = []
    if count:
        view = _aligned(view)
    for _ in range(count):
        offset, length = _EXTENT.unpack_from(view, position)
        position += _EXTENT.size
        buffers.append(view[offset : offset + length])
    return pickle.loads(view[position : position + pickle_bytes], buffers=buffers)


def describe_unserializable(value: Any, error: Exception) -> str:
    """A message like "value.model.lock (lock): cannot pickle '_thread.lock' object"."""
    path, culprit, reason = _find_culprit(value, "value", error, depth=0, seen=set())
    return (
        f"could not serialize a {type(value).__name__}: {path} ({type(culprit).__name__}): {reason}"
    )


def _children(obj: Any):
    if isinstance(obj, dict):
        for key, item in obj.items():
            yield f"[{key!r}]", item
    elif isinstance(obj, list | tuple | set | frozenset):
        for index, item in enumerate(obj):
            yield f"[{index}]", item
    else:
        attributes = getattr(obj, "__dict__", None)
        if isinstance(attributes, dict):
            for name, item in attributes.items():
                yield f".{name}", item


def _find_culprit(obj, path, error, *, depth, seen):
    """The deepest sub-object along an attribute path that still fails to pickle."""
    if depth < 8 and id(obj) not in seen:
        seen.add(id(obj))
        for suffix, child in _children(obj):
            if isinstance(child, int | float | str | bytes | type(None)):
                continue
            try:
                cloudpickle.dumps(child, protocol=5)
            except Exception as child_error:  # noqa: BLE001 - probing which child is unpicklable
                return _find_culprit(child, path + suffix, child_error, depth=depth + 1, seen=seen)
    return path, obj, error


_default_context = SerializationContext()


def default_context() -> SerializationContext:
    return _default_context


def serialize(
    value: Any, *, on_object=None, on_object_types: Iterable[type] = ()
) -> SerializedObject:
    """Serialize with the default context (see the module docstring for the hooks)."""
    return _default_context.serialize(value, on_object=on_object, on_object_types=on_object_types)


def register_serializer(cls: type, *, serializer, deserializer) -> None:
    _default_context.register_serializer(cls, serializer=serializer, deserializer=deserializer)


def register_pickle_reducer(cls: type, reducer) -> None:
    _default_context.register_pickle_reducer(cls, reducer)
