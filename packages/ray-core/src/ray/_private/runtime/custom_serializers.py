"""``ray.register_custom_serializer`` / ``ray.util.register_serializer``.

Registrations apply in this process at once and are stored in the GCS so every
worker of the job applies them before it runs a task (a worker checks a
version counter, so the common case costs one dict lookup).
"""

from __future__ import annotations

import cloudpickle

from plasma import serialization as plasma_ser

_registered: dict[type, tuple] = {}


def register(cls, *, use_pickle=False, use_dict=False, serializer=None, deserializer=None):
    if use_pickle:
        plasma_ser.default_context().deregister(cls)
        _registered[cls] = ("pickle",)
        return
    if use_dict:
        serializer = lambda obj: obj.__dict__  # noqa: E731

        def deserializer(state, _cls=cls):
            obj = _cls.__new__(_cls)
            obj.__dict__.update(state)
            return obj

    if serializer is None or deserializer is None:
        raise ValueError(
            "register_custom_serializer needs use_pickle=True, use_dict=True, or both "
            "serializer= and deserializer="
        )
    plasma_ser.register_serializer(cls, serializer=serializer, deserializer=deserializer)
    _registered[cls] = ("custom", serializer, deserializer)


def deregister(cls) -> None:
    plasma_ser.default_context().deregister(cls)
    _registered.pop(cls, None)


def export_blob() -> bytes:
    """All registrations, pickled (classes and functions by value where needed)."""
    return cloudpickle.dumps(dict(_registered))


def apply_blob(blob: bytes) -> None:
    for cls, entry in cloudpickle.loads(blob).items():
        if entry[0] == "custom":
            plasma_ser.register_serializer(cls, serializer=entry[1], deserializer=entry[2])


__all__ = ["apply_blob", "deregister", "export_blob", "register"]
