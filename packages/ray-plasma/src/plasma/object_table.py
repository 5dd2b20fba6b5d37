"""The store's object lifecycle as a pure state machine (no sockets, no memory).

An object is *created* (writable, owned by its creator), then *sealed* (immutable)
or *aborted*. Clients *pin* objects they hold (a count per client); a sealed object
with no pins sits in an LRU list and may be evicted when an allocation does not fit.
``delete`` is deferred until no client pins the object. A client that goes away
releases every pin and aborts whatever it created but never sealed.

Slabs. A client that creates many small objects leases a *slab* (one extent)
and places small objects in it itself, so creating one costs no round trip
(``create_in_slab`` checks the placement: inside the client's current slab,
above everything placed before, so objects never overlap). A slab's extent goes
back to the allocator once it is retired (the client leased a new one or left)
and its last object is gone. The price is fragmentation: one long-lived small
object keeps its whole slab allocated, and evicting small objects frees space
only when their slab empties.

Every mutating method validates first and changes state only once it cannot fail,
so a bad request never leaves the table half-updated. Methods return the objects
whose space was freed (so the I/O shell can notify subscribers).
"""

from __future__ import annotations

import enum
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from plasma.allocator import Allocator
from plasma.errors import ObjectExistsError, ObjectNotFoundError, ObjectStoreFullError


class ObjectState(enum.Enum):
    CREATED = "created"
    SEALED = "sealed"


@dataclass(eq=False)
class ObjectEntry:
    key: bytes
    offset: int
    data_size: int
    metadata: bytes
    extent_bytes: int
    creator: int
    create_time: float
    state: ObjectState = ObjectState.CREATED
    pins: dict[int, int] = field(default_factory=dict)
    delete_requested: bool = False
    slab: Slab | None = None

    @property
    def pin_count(self) -> int:
        return sum(self.pins.values())


@dataclass(eq=False)
class Slab:
    offset: int
    size: int
    owner: int
    high_water: int  # next free offset: placements only move up
    live_objects: int = 0
    retired: bool = False


class ObjectTable:
    """Objects of one arena, keyed by their 20-byte id."""

    def __init__(self, capacity_bytes: int, *, clock: Callable[[], float] = time.time) -> None:
        self.allocator = Allocator(capacity_bytes)
        self._clock = clock
        self._objects: dict[bytes, ObjectEntry] = {}
        self._lru: OrderedDict[bytes, None] = OrderedDict()  # sealed, unpinned
        self._evictable_bytes = 0
        self._by_client: dict[int, set[bytes]] = {}  # objects a client pins or created
        self._slabs: dict[int, Slab] = {}  # client -> its current slab

    # --- queries ---------------------------------------------------------
    @property
    def capacity_bytes(self) -> int:
        return self.allocator.capacity_bytes

    @property
    def used_bytes(self) -> int:
        return self.allocator.allocated_bytes

    @property
    def pinned_bytes(self) -> int:
        """Bytes that eviction cannot reclaim (pinned or not yet sealed)."""
        return self.used_bytes - self._evictable_bytes

    def get(self, key: bytes) -> ObjectEntry | None:
        return self._objects.get(key)

    def is_sealed(self, key: bytes) -> bool:
        entry = self._objects.get(key)
        return entry is not None and entry.state is ObjectState.SEALED

    def entries(self) -> list[ObjectEntry]:
        return list(self._objects.values())

    def __len__(self) -> int:
        return len(self._objects)

    # --- lifecycle ---------------------------------------------------------
    def create(
        self, key: bytes, data_size: int, metadata: bytes, client: int
    ) -> tuple[ObjectEntry, list[ObjectEntry]]:
        """Allocate a new unsealed object pinned once by ``client``.

        Returns the entry and the objects evicted to make room.
        """
        if key in self._objects:
            raise ObjectExistsError(key.hex())
        if data_size < 0:
            raise ValueError(f"data_size must be >= 0, got {data_size}")
        offset, evicted = self._allocate(data_size)
        entry = ObjectEntry(
            key=key,
            offset=offset,
            data_size=data_size,
            metadata=bytes(metadata),
            extent_bytes=Allocator.extent_size(data_size),
            creator=client,
            create_time=self._clock(),
        )
        self._objects[key] = entry
        self._pin(entry, client)
        return entry, evicted

    def lease_slab(self, client: int, size: int) -> tuple[Slab, list[ObjectEntry]]:
        """Give ``client`` a fresh slab of ``size`` bytes (retiring its current one)."""
        offset, evicted = self._allocate(size)
        self._retire_slab(client)
        slab = Slab(
            offset=offset, size=Allocator.extent_size(size), owner=client, high_water=offset
        )
        self._slabs[client] = slab
        return slab, evicted

    def create_in_slab(
        self, key: bytes, offset: int, data_size: int, metadata: bytes, client: int
    ) -> ObjectEntry:
        """Register an object the client placed at ``offset`` in its current slab."""
        if key in self._objects:
            raise ObjectExistsError(key.hex())
        slab = self._slabs.get(client)
        extent = Allocator.extent_size(data_size)
        if (
            slab is None
            or data_size < 0
            or offset % 64
            or offset < slab.high_water
            or offset + extent > slab.offset + slab.size
        ):
            raise ValueError(
                f"placement at {offset} (+{data_size}) is not free in the client's slab"
            )
        entry = ObjectEntry(
            key=key,
            offset=offset,
            data_size=data_size,
            metadata=bytes(metadata),
            extent_bytes=extent,
            creator=client,
            create_time=self._clock(),
            slab=slab,
        )
        slab.high_water = offset + extent
        slab.live_objects += 1
        self._objects[key] = entry
        self._pin(entry, client)
        return entry

    def seal(self, key: bytes, client: int) -> tuple[ObjectEntry, list[ObjectEntry]]:
        entry = self._created_by(key, client, "seal")
        entry.state = ObjectState.SEALED
        freed = []
        if client not in entry.pins:
            self._forget_client_object(client, key)
        if not entry.pins:
            freed = self._became_unpinned(entry)
        return entry, freed

    def abort(self, key: bytes, client: int) -> ObjectEntry:
        entry = self._created_by(key, client, "abort")
        for pinner in entry.pins:
            self._forget_client_object(pinner, key)
        entry.pins.clear()
        self._forget_client_object(client, key)
        self._free(entry)
        return entry

    def pin(self, key: bytes, client: int) -> ObjectEntry | None:
        """Pin a sealed object for ``client`` (a get); None when it is not sealed."""
        entry = self._objects.get(key)
        if entry is None or entry.state is not ObjectState.SEALED:
            return None
        self._pin(entry, client)
        return entry

    def release(self, key: bytes, client: int, count: int = 1) -> list[ObjectEntry]:
        """Drop ``count`` of ``client``'s pins; returns objects freed by a pending delete."""
        entry = self._objects.get(key)
        if entry is None or client not in entry.pins:
            return []
        remaining = entry.pins[client] - max(count, 1)
        if remaining > 0:
            entry.pins[client] = remaining
            return []
        del entry.pins[client]
        if entry.creator != client or entry.state is ObjectState.SEALED:
            self._forget_client_object(client, key)
        if entry.pins or entry.state is not ObjectState.SEALED:
            return []
        return self._became_unpinned(entry)

    def delete(self, key: bytes) -> list[ObjectEntry]:
        """Delete now if nobody pins the object, else once the last pin is released."""
        entry = self._objects.get(key)
        if entry is None:
            return []
        if entry.pins or entry.state is not ObjectState.SEALED:
            entry.delete_requested = True
            return []
        self._lru.pop(key, None)
        self._evictable_bytes -= entry.extent_bytes
        self._free(entry)
        return [entry]

    def evict(self, num_bytes: int) -> list[ObjectEntry]:
        """Evict least-recently-used unpinned objects until ``num_bytes`` are freed."""
        evicted = []
        freed = 0
        while freed < num_bytes and self._lru:
            entry = self._evict_one()
            evicted.append(entry)
            freed += entry.extent_bytes
        return evicted

    def disconnect(self, client: int) -> tuple[list[ObjectEntry], list[ObjectEntry]]:
        """Release every pin of ``client`` and abort its unsealed objects.

        Returns ``(aborted, freed)``: aborted unsealed objects, and sealed objects
        freed because a delete was waiting for these pins.
        """
        aborted, freed = [], []
        self._retire_slab(client)
        for key in list(self._by_client.pop(client, ())):
            entry = self._objects.get(key)
            if entry is None:
                continue
            had_pins = entry.pins.pop(client, None) is not None
            if entry.state is ObjectState.CREATED and entry.creator == client:
                for pinner in entry.pins:
                    self._forget_client_object(pinner, key)
                entry.pins.clear()
                self._free(entry)
                aborted.append(entry)
            elif had_pins and not entry.pins and entry.state is ObjectState.SEALED:
                freed += self._became_unpinned(entry)
        return aborted, freed

    # --- internals -------------------------------------------------------------
    def _created_by(self, key: bytes, client: int, verb: str) -> ObjectEntry:
        entry = self._objects.get(key)
        if entry is None:
            raise ObjectNotFoundError(key.hex(), f"cannot {verb} an object that does not exist")
        if entry.state is not ObjectState.CREATED:
            raise ObjectNotFoundError(key.hex(), f"cannot {verb}: the object is already sealed")
        if entry.creator != client:
            raise ObjectNotFoundError(key.hex(), f"cannot {verb}: another client created it")
        return entry

    def _pin(self, entry: ObjectEntry, client: int) -> None:
        if not entry.pins and entry.key in self._lru:
            del self._lru[entry.key]
            self._evictable_bytes -= entry.extent_bytes
        entry.pins[client] = entry.pins.get(client, 0) + 1
        self._by_client.setdefault(client, set()).add(entry.key)

    def _became_unpinned(self, entry: ObjectEntry) -> list[ObjectEntry]:
        """A sealed object lost its last pin: delete it if asked, else make it evictable."""
        if entry.delete_requested:
            self._free(entry)
            return [entry]
        self._lru[entry.key] = None
        self._evictable_bytes += entry.extent_bytes
        return []

    def _forget_client_object(self, client: int, key: bytes) -> None:
        keys = self._by_client.get(client)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_client[client]

    def _free(self, entry: ObjectEntry) -> None:
        del self._objects[entry.key]
        slab = entry.slab
        if slab is None:
            self.allocator.free(entry.offset)
            return
        slab.live_objects -= 1
        if slab.retired and slab.live_objects == 0:
            self.allocator.free(slab.offset)

    def _retire_slab(self, client: int) -> None:
        slab = self._slabs.pop(client, None)
        if slab is not None:
            slab.retired = True
            if slab.live_objects == 0:
                self.allocator.free(slab.offset)

    def _evict_one(self) -> ObjectEntry:
        key, _ = self._lru.popitem(last=False)
        entry = self._objects[key]
        self._evictable_bytes -= entry.extent_bytes
        self._free(entry)
        return entry

    def _allocate(self, data_size: int) -> tuple[int, list[ObjectEntry]]:
        offset = self.allocator.allocate(data_size)
        if offset is not None:
            return offset, []
        needed = Allocator.extent_size(data_size)
        free_bytes = self.capacity_bytes - self.used_bytes
        if needed > self.capacity_bytes or free_bytes + self._evictable_bytes < needed:
            raise ObjectStoreFullError(data_size, self.capacity_bytes, self.pinned_bytes)
        evicted = []
        while offset is None and self._lru:
            evicted.append(self._evict_one())
            offset = self.allocator.allocate(data_size)
        if offset is None:
            # Evicting everything evictable still left no contiguous extent
            # (fragmentation around pinned objects). The caller must still
            # announce what was evicted, so it travels on the error.
            error = ObjectStoreFullError(data_size, self.capacity_bytes, self.pinned_bytes)
            error.evicted = evicted
            raise error
        return offset, evicted
