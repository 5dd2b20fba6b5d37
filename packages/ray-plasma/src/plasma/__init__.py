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
from plasma.store import PlasmaStore

__all__ = [
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
