"""Errors raised by the plasma store and client.

::

    PlasmaError
     ├── ObjectStoreFullError   (also a MemoryError)
     ├── ObjectExistsError
     ├── ObjectNotFoundError
     ├── ObjectNotAvailable     (a sentinel: ``client.get`` *returns* this class for an
     │                           object that was not sealed before the timeout)
     ├── StoreConnectionError   (also a ConnectionError)
     ├── ProtocolError
     └── SerializationError     (also a TypeError)

Every error pickles (its constructor arguments are its ``args``).
"""

from __future__ import annotations


class PlasmaError(Exception):
    """Base class of every error raised by ``plasma``."""


def _mib(num_bytes: int) -> str:
    return f"{num_bytes / 2**20:.1f} MiB"


class ObjectStoreFullError(PlasmaError, MemoryError):
    """No room for a new object even after evicting every unpinned object."""

    def __init__(self, requested_bytes: int, capacity_bytes: int, pinned_bytes: int) -> None:
        super().__init__(requested_bytes, capacity_bytes, pinned_bytes)
        self.requested_bytes = requested_bytes
        self.capacity_bytes = capacity_bytes
        self.pinned_bytes = pinned_bytes

    def __str__(self) -> str:
        return (
            f"object store is full: cannot allocate {self.requested_bytes} bytes "
            f"({_mib(self.requested_bytes)}); capacity {self.capacity_bytes} bytes "
            f"({_mib(self.capacity_bytes)}), of which {self.pinned_bytes} bytes "
            f"({_mib(self.pinned_bytes)}) are pinned by clients or not yet sealed and "
            "cannot be evicted. Release or delete objects you no longer need (drop the "
            "buffers/arrays returned by get, or call client.release), or start the store "
            "with a larger capacity (plasma_store -m BYTES / ray.init(object_store_memory=...))."
        )


class ObjectExistsError(PlasmaError):
    """An object with this id was already created."""

    def __init__(self, object_id_hex: str) -> None:
        super().__init__(object_id_hex)
        self.object_id_hex = object_id_hex

    def __str__(self) -> str:
        return (
            f"object {self.object_id_hex} already exists in the store; objects are "
            "immutable, so create it under a fresh id (ObjectID.from_random())"
        )


class ObjectNotFoundError(PlasmaError):
    """The object is not in the store (or is not in the state the call needs)."""

    def __init__(self, object_id_hex: str, detail: str = "") -> None:
        super().__init__(object_id_hex, detail)
        self.object_id_hex = object_id_hex
        self.detail = detail

    def __str__(self) -> str:
        return f"object {self.object_id_hex} not found" + (
            f": {self.detail}" if self.detail else ""
        )


class ObjectNotAvailable(PlasmaError):
    """Sentinel for an object that was not sealed before a ``get`` timed out.

    ``PlasmaClient.get`` returns the class itself (``value is plasma.ObjectNotAvailable``)
    in place of each such value, like Arrow's plasma did; it is also an exception class
    so callers may raise it.
    """


class StoreConnectionError(PlasmaError, ConnectionError):
    """The client cannot reach the store, or the store closed the connection."""


class ProtocolError(PlasmaError):
    """A malformed message on the store socket."""


class SerializationError(PlasmaError, TypeError):
    """A value could not be serialized; the message names its type and attribute path."""
