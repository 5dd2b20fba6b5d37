"""``ray.register_custom_serializer`` / ``ray.util.register_serializer``.

Registrations apply in this process at once. Values this process serializes carry the
deserializer with them, so any process reads them. 0.7's ``register_custom_serializer``
(``local=False``, its default) also makes the job's workers serialize that class the same
way: such registrations ride with every function and actor class exported after them
(``shared_blob``), and a worker applies them when it loads one (``apply_blob``).
"""

from __future__ import annotations

import cloudpickle

from plasma import serialization as plasma_ser

_registered: dict[type, tuple] = {}
_shared: dict[type, tuple] = {}  # the ones the job's workers apply too
_applied: set[bytes] = set()  # blobs applied here (a worker loads many functions)


def register(cls, *, use_pickle=False, use_dict=False, serializer=None, deserializer=None,
             shared: bool = False):
    if use_pickle:
        plasma_ser.default_context().deregister(cls)
        _registered[cls] = ("pickle",)
        _shared.pop(cls, None)
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
    if shared:
        _shared[cls] = _registered[cls]
    else:
        _shared.pop(cls, None)


def deregister(cls) -> None:
    plasma_ser.default_context().deregister(cls)
    _registered.pop(cls, None)
    _shared.pop(cls, None)


def shared_blob() -> bytes | None:
    """The registrations the job's workers must apply (pickled), None when there are none."""
    return cloudpickle.dumps(dict(_shared)) if _shared else None


def apply_shared(blob: bytes) -> None:
    """Apply a ``shared_blob`` (once per distinct blob)."""
    if blob in _applied:
        return
    apply_blob(blob)
    _applied.add(blob)


def export_blob() -> bytes:
    """All registrations, pickled (classes and functions by value where needed)."""
    return cloudpickle.dumps(dict(_registered))


def apply_blob(blob: bytes) -> None:
    for cls, entry in cloudpickle.loads(blob).items():
        if entry[0] == "custom":
            plasma_ser.register_serializer(cls, serializer=entry[1], deserializer=entry[2])


__all__ = ["apply_blob", "apply_shared", "deregister", "export_blob", "register", "shared_blob"]
