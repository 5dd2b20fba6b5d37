"""plasma: a standalone shared-memory object store with zero-copy numpy serialization.

    store:  plasma_store -m 1000000000 -s /tmp/plasma
    client: client = plasma.connect("/tmp/plasma")
            object_id = client.put(numpy.ones(10**6))
            array = client.get(object_id)          # read-only, in shared memory

See README.md for the design and ``plasma.errors`` for the error tree.
"""

from plasma import errors, serialization
from plasma._ids import ObjectID
from plasma.client import PlasmaClient, connect
from plasma.errors import (
    ObjectExistsError,
    ObjectNotAvailable,
    ObjectNotFoundError,
    ObjectStoreFullError,
    PlasmaError,
    SerializationError,
    StoreConnectionError,
)


def __getattr__(name):
    # The server (and asyncio with it) loads only where a store runs, not in every client.
    if name == "PlasmaStore":
        from plasma.store import PlasmaStore

        return PlasmaStore
    if name == "ExternalStore":
        from plasma.external import ExternalStore

        return ExternalStore
    raise AttributeError(f"module 'plasma' has no attribute {name!r}")

__all__ = [
    "ExternalStore",
    "ObjectExistsError",
    "ObjectID",
    "ObjectNotAvailable",
    "ObjectNotFoundError",
    "ObjectStoreFullError",
    "PlasmaClient",
    "PlasmaError",
    "PlasmaStore",
    "SerializationError",
    "StoreConnectionError",
    "connect",
    "errors",
    "serialization",
]
