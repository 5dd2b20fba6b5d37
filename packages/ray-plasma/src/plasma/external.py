"""Where a full store sends objects, and gets them back from: the spilling hooks.

A store alone is a cache: when an allocation does not fit it evicts sealed objects
nobody pins, and when everything left is pinned it raises ``ObjectStoreFullError``.
An embedder that pins objects it must not lose (Ray's raylet pins every primary
copy) can instead move them out of memory: it implements ``ExternalStore`` and
installs it with ``PlasmaStore.set_external_store``. The store then

* asks ``make_room`` before it fails a create, and retries the allocation each time
  that answers True (a create only fails once it answers False);
* asks ``contains`` about an object a ``get`` cannot find in memory, and for one
  held outside calls ``restore`` and parks the get (even a ``timeout_ms=0`` get: the
  object exists, it is only elsewhere) until the object is sealed again or
  ``restore_failed_local`` says it will not come back;
* calls ``delete`` when a client deletes an object, so its outside copy goes too.

The embedder moves an object out by writing it somewhere, then
``drop_memory_copy_local`` (its memory goes back to the allocator; ``delete`` is not
called), and brings it back with the ordinary ``create_local`` / ``seal_local``.
Every method runs on the store's event-loop thread and must not block: do I/O on
other threads.
"""

from __future__ import annotations

import abc
from collections.abc import Awaitable

from plasma._ids import ObjectID


class ExternalStore(abc.ABC):
    """Storage outside the arena for objects the store could not keep in memory."""

    @abc.abstractmethod
    def make_room(self, num_bytes: int) -> Awaitable[bool]:
        """Move objects out until about ``num_bytes`` more could be allocated.

        Resolves True once some memory was released (the store retries the
        allocation; it may ask again), False when nothing more can be released.
        """

    @abc.abstractmethod
    def contains(self, object_id: ObjectID) -> bool:
        """Whether this object has a copy outside memory that ``restore`` can read."""

    @abc.abstractmethod
    def restore(self, object_id: ObjectID) -> None:
        """Start bringing the object back (``create_local`` + ``seal_local``), or call
        ``PlasmaStore.restore_failed_local`` if it cannot. Concurrent calls for one id
        must share one restore."""

    @abc.abstractmethod
    def delete(self, object_id: ObjectID) -> None:
        """A client deleted the object: drop its outside copy (if any)."""
