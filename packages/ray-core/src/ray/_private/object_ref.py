"""ObjectRef (also ObjectID): a future for a value in the cluster.

Each live ObjectRef counts as one local reference in the process's runtime;
dropping the last one lets the owner free the object. Pickling an ObjectRef
(e.g. inside a list passed to a task) records it so the owner keeps it alive.
"""

from __future__ import annotations

import os

from ray._private import runtime as _runtime
from ray._private.ids import JobID
from ray._private.runtime import serialization as _ser

# This runtime's ids (and Ray 0.7's) are 20 bytes: a 16-byte task id and a 4-byte index;
# Ray 2.x's are 28. Both lengths are accepted where users build refs from bytes.
_ID_LENGTHS = (20, 28)


class ObjectRef:
    __slots__ = ("_id", "_owner", "_hash", "_registered", "__weakref__")

    def __init__(self, id_bytes: bytes, owner=None, *, _register: bool = True):
        self._registered = False  # (read by __del__, which runs even if this raises)
        if type(id_bytes) is not bytes or len(id_bytes) not in _ID_LENGTHS:
            raise ValueError(
                "ObjectRef id needs to have length 20 (this runtime's and Ray 0.7's "
                f"ObjectID) or 28 (Ray 2.x's ObjectRef) bytes, got "
                f"{len(id_bytes) if isinstance(id_bytes, bytes) else type(id_bytes).__name__}"
                f": {id_bytes!r:.60}")
        self._id = id_bytes
        self._owner = owner
        self._hash = hash(id_bytes)
        if _register:
            rt = _runtime.maybe_current()
            if rt is not None:
                rt.add_local_ref(id_bytes, owner)
                self._registered = True

    @classmethod
    def _counted(cls, id_bytes: bytes, owner=None) -> ObjectRef:
        """A ref whose local reference the runtime has already counted (its submit path:
        the id is its own, so neither the check nor the runtime lookup is needed)."""
        ref = cls.__new__(cls)
        ref._id = id_bytes
        ref._owner = owner
        ref._hash = hash(id_bytes)
        ref._registered = True
        return ref

    @classmethod
    def from_random(cls) -> ObjectRef:
        return cls(os.urandom(20), _register=False)

    @classmethod
    def from_binary(cls, id_bytes: bytes) -> ObjectRef:
        return cls(id_bytes)

    @classmethod
    def from_hex(cls, hex_id: str) -> ObjectRef:
        return cls(bytes.fromhex(hex_id))

    @classmethod
    def nil(cls) -> ObjectRef:
        return cls(b"\xff" * 20, _register=False)

    def is_nil(self) -> bool:
        return self._id == b"\xff" * 20

    def binary(self) -> bytes:
        return self._id

    def hex(self) -> str:
        return self._id.hex()

    def task_id(self) -> bytes:
        return self._id[:16]

    def job_id(self) -> JobID:
        """The job whose task (or ``ray.put``) created the object."""
        return JobID(self._id[:JobID.SIZE])

    def owner_address(self):
        return self._owner

    def __eq__(self, other):
        return isinstance(other, ObjectRef) and other._id == self._id

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"ObjectRef({self._id.hex()})"

    def __del__(self):
        if self._registered:
            rt = _runtime.maybe_current()
            if rt is not None:  # (it only queues the release: never blocks or raises)
                rt.remove_local_ref(self._id)

    def __reduce__(self):
        refs = _ser.collecting_refs()
        if refs is not None:
            refs.append(self)
        owner = self._owner
        if owner is None:
            rt = _runtime.maybe_current()
            owner = rt.owner_address() if rt is not None else None
        return _rebuild, (self._id, owner)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    # -- futures -------------------------------------------------------------
    def future(self):
        """A concurrent.futures.Future that resolves to the value."""
        return _runtime.current().as_future(self)

    def __await__(self):
        import asyncio

        return asyncio.wrap_future(self.future()).__await__()


def _rebuild(id_bytes: bytes, owner) -> ObjectRef:
    return ObjectRef(id_bytes, owner)


ObjectID = ObjectRef
