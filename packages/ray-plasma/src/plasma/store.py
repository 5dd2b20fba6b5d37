"""The plasma store: an asyncio I/O shell around the pure ``ObjectTable``.

``PlasmaStore`` serves clients on a Unix socket inside the *current* asyncio loop
(so another program, such as Ray's raylet, can embed it) and offers the same
operations in-process through the ``*_local`` methods, which skip the socket.

Each connection is an ``asyncio.Protocol`` (cheaper than streams per message);
all table mutations happen under one lock, so the in-process API may also be
called from other threads. Waiting ``get`` requests are parked per object id and
answered when the object is sealed or their timeout expires.

With an ``ExternalStore`` installed (``set_external_store``; see ``plasma.external``)
a create that does not fit is parked while the external store makes room (spills)
and fails only when it cannot, and a get of an object held outside memory restores
it and waits for it.
"""

from __future__ import annotations

import asyncio
import logging
import mmap
import os
import socket
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from plasma import arena, errors, protocol
from plasma._ids import ID_SIZE, ObjectID, as_key
from plasma.allocator import Allocator
from plasma.external import ExternalStore
from plasma.object_table import ObjectEntry, ObjectState, ObjectTable

logger = logging.getLogger(__name__)

LOCAL_CLIENT = 0  # the client id of the in-process (embedding) API
MAX_SLAB_BYTES = 4 * 2**20

Listener = Callable[[str, ObjectID, int], None]
T = TypeVar("T")


class _GetWaiter:
    __slots__ = ("connection", "request_id", "keys", "results", "missing", "timer", "done")

    def __init__(self, connection, request_id, keys, results, missing):
        self.connection = connection
        self.request_id = request_id
        self.keys = keys
        self.results = results
        self.missing = missing  # index -> key, for results still None
        self.timer = None
        self.done = False


class _Connection(asyncio.Protocol):
    def __init__(self, store: PlasmaStore) -> None:
        self.store = store
        self.client_id = 0
        self.transport: asyncio.Transport | None = None
        self.frames = protocol.FrameBuffer()
        self.waiters: set[_GetWaiter] = set()
        self.subscribed = False

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.store._accept(self)

    def data_received(self, data) -> None:
        try:
            frames = self.frames.feed(data)
        except errors.ProtocolError as error:
            self.fail(error)
            return
        for body in frames:
            if self.transport is None or self.transport.is_closing():
                return
            self.store._handle_frame(self, body)

    def connection_lost(self, exc) -> None:
        self.store._disconnect(self)
        self.transport = None

    def send(self, frame: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(frame)

    def fail(self, error: Exception) -> None:
        logger.warning("closing plasma client %d: %s", self.client_id, error)
        self.send(protocol.error_reply(0, error))
        if self.transport is not None:
            self.transport.close()


class PlasmaStore:
    """A shared-memory object store of ``capacity_bytes``.

    Args:
        capacity_bytes: size of the arena.
        directory: where the arena file lives (``/dev/shm``, or a hugetlbfs mount).
        huge_pages: the directory is a hugetlbfs mount (the size is rounded up to 2 MiB).
        prefault: populate every page at start, in the background (see ``plasma.arena``);
            ``"deferred"``: only when ``start_prefault()`` is called.
        name_prefix: prefix of the (immediately unlinked) arena file name.
    """

    def __init__(
        self,
        capacity_bytes: int,
        *,
        directory: str = "/dev/shm",
        huge_pages: bool = False,
        prefault: bool | str = True,
        name_prefix: str = "plasma",
    ) -> None:
        if capacity_bytes <= 0:
            raise ValueError(f"capacity_bytes must be positive, got {capacity_bytes}")
        self._capacity_request = int(capacity_bytes)
        self._directory = directory
        self._huge_pages = huge_pages
        self._prefault = prefault
        self._name_prefix = name_prefix
        self._table = ObjectTable(self._capacity_request)
        self._lock = threading.RLock()
        self._connections: dict[int, _Connection] = {}
        self._next_client_id = LOCAL_CLIENT + 1
        self._waiters: dict[bytes, list[_GetWaiter]] = {}
        self._listeners: list[Listener] = []
        self._fd = -1
        self._arena_size = 0
        self._mm: mmap.mmap | None = None
        self._prefaulter: arena.Prefaulter | None = None
        self._server: asyncio.AbstractServer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._socket_path: str | None = None
        self._external: ExternalStore | None = None

    # --- lifecycle -------------------------------------------------------------
    def _open_arena(self) -> None:
        if self._mm is not None:
            return
        self._fd, self._arena_size = arena.create_arena_file(
            self._capacity_request,
            directory=self._directory,
            huge_pages=self._huge_pages,
            name_prefix=self._name_prefix,
        )
        self._mm = arena.map_arena(self._fd, self._arena_size)
        if self._prefault and self._prefault != "deferred":
            self.start_prefault()

    def start_prefault(self) -> None:
        """Begin populating the arena in the background (once; ``prefault="deferred"``
        leaves the moment to the embedder, e.g. after its own start-up burst)."""
        if self._prefaulter is not None or self._mm is None:
            return
        self._prefaulter = arena.Prefaulter(
            arena.mapping_address(self._mm), self._arena_size,
            arena.prefault_limit("PLASMA_PREFAULT_BYTES"), nice=arena.prefault_nice(),
        ).start()

    async def start(self, socket_path: str, *, wait_prefault: bool = False) -> None:
        """Create the arena and serve clients on ``socket_path`` in the running loop.

        With ``wait_prefault`` the socket appears only once the arena is resident, so
        no client ever writes into memory that is still being allocated (the
        ``plasma_store`` executable does this); otherwise pre-faulting continues in
        the background while clients are served.
        """
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._open_arena()
        if wait_prefault and self._prefaulter is not None:
            await self._loop.run_in_executor(None, self._prefaulter.wait)
        if os.path.exists(socket_path):
            os.unlink(socket_path)
        self._socket_path = socket_path
        self._server = await self._loop.create_unix_server(lambda: _Connection(self), socket_path)

    def wait_prefaulted(self, timeout_s: float | None = None) -> bool:
        """Block until the background pre-fault finished (True if it did)."""
        return self._prefaulter is None or self._prefaulter.wait(timeout_s)

    async def stop(self) -> None:
        """Close every client, stop serving, unmap the arena and remove the socket."""
        if self._server is not None:
            self._server.close()
            self._server = None
        for connection in list(self._connections.values()):
            if connection.transport is not None:
                connection.transport.close()
            self._disconnect(connection)
        if self._socket_path is not None:
            try:
                os.unlink(self._socket_path)
            except FileNotFoundError:
                pass
            self._socket_path = None
        if self._prefaulter is not None:
            await asyncio.get_running_loop().run_in_executor(None, self._prefaulter.stop)
            self._prefaulter = None
        self._close_arena()
        await asyncio.sleep(0)  # let transports finish closing

    def _close_arena(self) -> None:
        if self._mm is not None:
            try:
                self._mm.close()
            except BufferError:
                pass  # views handed out in-process are alive; the GC unmaps it later
            self._mm = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    # --- properties --------------------------------------------------------------
    @property
    def capacity_bytes(self) -> int:
        return self._table.capacity_bytes

    @property
    def used_bytes(self) -> int:
        return self._table.used_bytes

    @property
    def pinned_bytes(self) -> int:
        return self._table.pinned_bytes

    @property
    def num_objects(self) -> int:
        return len(self._table)

    @property
    def socket_path(self) -> str | None:
        return self._socket_path

    def set_external_store(self, external: ExternalStore | None) -> None:
        """Spill to / restore from ``external`` instead of failing when full."""
        self._external = external

    def add_listener(self, callback: Listener) -> None:
        """Call ``callback(event, object_id, data_size)`` for "sealed" and "deleted" events.

        Callbacks run on the store's event-loop thread (events caused by the
        in-process API on other threads are handed over to it) and must not block.
        """
        self._listeners.append(callback)

    # --- in-process API ---------------------------------------------------------
    def create_local(self, object_id, data_size: int, metadata: bytes = b"") -> memoryview:
        """Create an object and return a writable view of its data; pinned until released."""
        self._open_arena()
        with self._lock:
            entry, evicted = self._create(as_key(object_id), int(data_size), metadata, LOCAL_CLIENT)
        self._announce_freed(evicted)
        return self._arena_view()[entry.offset : entry.offset + entry.data_size]

    async def create_local_when_room(
        self, object_id, data_size: int, metadata: bytes = b""
    ) -> memoryview:
        """``create_local`` that waits for the external store to make room rather than
        failing at once (call it on the store's loop)."""
        return await self._retry_when_room(
            int(data_size), lambda: self.create_local(object_id, data_size, metadata)
        )

    def seal_local(self, object_id) -> None:
        with self._lock:
            entry, freed = self._table.seal(as_key(object_id), LOCAL_CLIENT)
        self._announce_sealed(entry)
        self._announce_freed(freed)

    def abort_local(self, object_id) -> None:
        with self._lock:
            self._table.abort(as_key(object_id), LOCAL_CLIENT)

    def get_local(self, object_id) -> tuple[memoryview, bytes] | None:
        """A read-only view and the metadata of a sealed object (pinned until release_local)."""
        with self._lock:
            entry = self._table.pin(as_key(object_id), LOCAL_CLIENT)
        if entry is None:
            return None
        view = self._arena_view()[entry.offset : entry.offset + entry.data_size]
        return view.toreadonly(), entry.metadata

    def get_local_extent(self, object_id) -> tuple[int, int, bytes] | None:
        """Where a sealed object lies in the arena file: ``(offset, data size, metadata)``,
        pinned until ``release_local`` (like ``get_local``). With ``arena_fd`` a sender
        can hand the bytes to a socket with ``os.sendfile``, without mapping them."""
        with self._lock:
            entry = self._table.pin(as_key(object_id), LOCAL_CLIENT)
        if entry is None:
            return None
        return entry.offset, entry.data_size, entry.metadata

    def local_offset(self, object_id) -> int:
        """The arena-file offset of an object created or sealed here (KeyError if none)."""
        with self._lock:
            entry = self._table.get(as_key(object_id))
        if entry is None:
            raise KeyError(f"object {as_key(object_id).hex()} is not in the store")
        return entry.offset

    def populate_range(self, offset: int, length: int) -> None:
        """Populate this process's page tables for ``[offset, offset + length)`` of the
        arena now (GIL released), unless the background pre-fault covered it: a writer
        about to fill a large object there (a transfer receiving into it) then copies at
        memory speed instead of taking a fault per page."""
        prefaulter, mm = self._prefaulter, self._mm
        if mm is None or length <= 0:
            return
        if prefaulter is not None and prefaulter.covers(offset + length):
            return
        arena.populate(arena.mapping_address(mm) + offset, length)

    @property
    def arena_fd(self) -> int:
        """The arena file's descriptor (owned by the store: do not close it)."""
        if self._fd < 0:
            raise errors.StoreConnectionError("the store is stopped: its arena is closed")
        return self._fd

    def _arena_view(self) -> memoryview:
        if self._mm is None:
            raise errors.StoreConnectionError("the store is stopped: its arena is unmapped")
        return memoryview(self._mm)

    def release_local(self, object_id) -> None:
        with self._lock:
            freed = self._table.release(as_key(object_id), LOCAL_CLIENT)
        self._announce_freed(freed)

    def delete_local(self, object_id) -> None:
        with self._lock:
            freed = self._table.delete(as_key(object_id))
        self._announce_freed(freed)
        if self._external is not None:
            self._external.delete(ObjectID(as_key(object_id)))

    def drop_memory_copy_local(self, object_id) -> None:
        """Free the in-memory copy of an object the external store now holds (at once, or
        when its last pin goes); unlike ``delete_local`` the outside copy stays."""
        with self._lock:
            freed = self._table.delete(as_key(object_id))
        self._announce_freed(freed)

    def sole_local_pin(self, object_id) -> bool:
        """Whether only the in-process client pins this sealed object (outside any slab):
        releasing those pins frees its memory at once."""
        with self._lock:
            entry = self._table.get(as_key(object_id))
            return (
                entry is not None
                and entry.state is ObjectState.SEALED
                and entry.slab is None
                and list(entry.pins) == [LOCAL_CLIENT]
            )

    def memory_summary_local(self) -> dict:
        """Where the arena's bytes are, for diagnosing a full store: sealed objects
        pinned only in-process, pinned by clients (per client id), unsealed, evictable."""
        local_only = unsealed = evictable = objects = 0
        by_client: dict[int, int] = {}
        with self._lock:
            for entry in self._table.entries():
                objects += 1
                size = entry.extent_bytes
                if entry.state is not ObjectState.SEALED:
                    unsealed += size
                elif not entry.pins:
                    evictable += size
                elif list(entry.pins) == [LOCAL_CLIENT]:
                    local_only += size
                else:
                    for client in entry.pins:
                        if client != LOCAL_CLIENT:
                            by_client[client] = by_client.get(client, 0) + size
        return {"local_only": local_only, "by_client": by_client, "unsealed": unsealed,
                "evictable": evictable, "objects": objects}

    def restore_failed_local(self, object_id) -> None:
        """The external store cannot bring this object back: answer the gets parked on
        it (``None`` for it, as for a missing object)."""
        key = as_key(object_id)
        with self._lock:
            for waiter in self._waiters.pop(key, ()):
                if waiter.done:
                    continue
                for index in [i for i, k in waiter.missing.items() if k == key]:
                    del waiter.missing[index]
                if not waiter.missing:
                    self._finish_waiter(waiter, reply=True)

    def contains_local(self, object_id) -> bool:
        with self._lock:
            return self._table.is_sealed(as_key(object_id))

    def evict_local(self, num_bytes: int) -> int:
        with self._lock:
            evicted = self._table.evict(num_bytes)
        self._announce_freed(evicted)
        return sum(entry.extent_bytes for entry in evicted)

    # --- connections ---------------------------------------------------------------
    def _accept(self, connection: _Connection) -> None:
        with self._lock:
            connection.client_id = self._next_client_id
            self._next_client_id += 1
            self._connections[connection.client_id] = connection
        hello = protocol.encode(
            [protocol.HELLO, 0, connection.client_id, self._arena_size, self.capacity_bytes]
        )
        transport = connection.transport
        if transport is None:  # (connection_made sets it before calling us)
            return
        raw = transport.get_extra_info("socket")
        dup = socket.socket(fileno=os.dup(raw.fileno()))
        try:
            socket.send_fds(dup, [hello], [self._fd])
        except OSError as error:
            logger.warning("could not hand the arena to a new client: %s", error)
            transport.close()
        finally:
            dup.close()

    def _disconnect(self, connection: _Connection) -> None:
        with self._lock:
            if self._connections.pop(connection.client_id, None) is None:
                return
            for waiter in list(connection.waiters):
                self._finish_waiter(waiter, reply=False)
            aborted, freed = self._table.disconnect(connection.client_id)
        self._announce_freed(freed)

    # --- request handling -------------------------------------------------------------
    def _handle_frame(self, connection: _Connection, body: bytes) -> None:
        try:
            message = protocol.decode(body)
        except Exception as error:  # noqa: BLE001 - a bad frame fails that connection only
            connection.fail(errors.ProtocolError(f"undecodable frame: {error}"))
            return
        op, request_id = message[0], message[1]
        if not isinstance(request_id, int) or isinstance(request_id, bool) or request_id < 0:
            connection.fail(errors.ProtocolError(f"bad request id {request_id!r:.40}"))
            return
        handler = self._HANDLERS.get(op) if isinstance(op, int) else None
        try:
            if handler is None:
                raise errors.ProtocolError(f"unknown operation {op!r:.40}")
            reply = handler(self, connection, request_id, *message[2:])
        except (errors.PlasmaError, ValueError, TypeError) as error:
            if isinstance(error, errors.ObjectStoreFullError):
                self._announce_freed(getattr(error, "evicted", []))
            if request_id:
                connection.send(protocol.error_reply(request_id, error))
            elif op == protocol.CREATE_IN_SLAB and len(message) > 2:
                connection.send(protocol.async_error(message[2], error))
            else:
                logger.debug(
                    "one-way op %r of client %d failed: %s", op, connection.client_id, error
                )
            return
        except Exception as error:  # a bug must cost one connection, never the store
            logger.exception("plasma store failed on a request of client %d", connection.client_id)
            connection.fail(errors.ProtocolError(f"internal error: {error!r}"))
            return
        if reply is not None and request_id:
            connection.send(protocol.encode([protocol.REPLY, request_id, protocol.OK, reply]))

    def _create(
        self, key: bytes, data_size: int, metadata, client: int
    ) -> tuple[ObjectEntry, list]:
        metadata = _check_bytes(metadata, "metadata")
        _check_int(data_size, "data_size", 0, self.capacity_bytes * 4 + 2**32)
        return self._table.create(key, data_size, metadata, client)

    def _op_create(self, connection, request_id, key, data_size, metadata=b""):
        key = _check_key(key)

        def attempt():
            self._check_connected(connection)
            with self._lock:
                entry, evicted = self._create(key, data_size, metadata, connection.client_id)
            self._announce_freed(evicted)
            return entry.offset

        return self._create_or_park(connection, request_id, data_size, attempt)

    def _op_slab_lease(self, connection, request_id, size):
        _check_int(size, "size", 64, max(64, min(MAX_SLAB_BYTES, self.capacity_bytes // 8)))
        with self._lock:
            slab, evicted = self._table.lease_slab(connection.client_id, size)
        self._announce_freed(evicted)
        return [slab.offset, slab.size]

    def _op_create_in_slab(self, connection, request_id, key, offset, data_size, metadata=b""):
        key = _check_key(key)
        _check_int(offset, "offset", 0, self.capacity_bytes)
        _check_int(data_size, "data_size", 0, MAX_SLAB_BYTES)
        metadata = _check_bytes(metadata, "metadata")
        with self._lock:
            self._table.create_in_slab(key, offset, data_size, metadata, connection.client_id)
        return True

    def _op_create_and_seal(self, connection, request_id, key, data, metadata=b""):
        key = _check_key(key)
        data = _check_bytes(data, "data")
        client = connection.client_id

        def attempt():
            self._check_connected(connection)
            with self._lock:
                entry, evicted = self._create(key, len(data), metadata, client)
                self._mm[entry.offset : entry.offset + len(data)] = data
                self._table.seal(key, client)
                freed = self._table.release(key, client)
            self._announce_freed(evicted)
            self._announce_sealed(entry)
            self._announce_freed(freed)
            return True

        return self._create_or_park(connection, request_id, len(data), attempt)

    # --- creates that wait for room ------------------------------------------------------
    def _check_connected(self, connection: _Connection) -> None:
        if self._connections.get(connection.client_id) is not connection:
            raise errors.ProtocolError("the client disconnected while its create waited")

    def _may_make_room(self, data_size: int) -> bool:
        return (
            self._external is not None
            and self._loop is not None
            and Allocator.extent_size(data_size) <= self.capacity_bytes
        )

    def _create_or_park(self, connection, request_id: int, data_size: int, attempt):
        """Run a create; if the store is full and an external store can make room, park
        the request and answer it when the create fits (or definitely cannot)."""
        try:
            return attempt()
        except errors.ObjectStoreFullError as error:
            if not request_id or not self._may_make_room(data_size):
                raise
            self._announce_freed(getattr(error, "evicted", []))

        async def parked():
            try:
                reply = await self._retry_when_room(data_size, attempt, tried=True)
            except (errors.PlasmaError, ValueError, TypeError) as error:
                if isinstance(error, errors.ObjectStoreFullError):
                    self._announce_freed(getattr(error, "evicted", []))
                connection.send(protocol.error_reply(request_id, error))
                return
            connection.send(protocol.encode([protocol.REPLY, request_id, protocol.OK, reply]))

        loop = self._loop
        if loop is None:  # _may_make_room checked it; a stopped store has none
            raise errors.ProtocolError("the store is not running")
        loop.create_task(parked())
        return None

    async def _retry_when_room(
        self, data_size: int, attempt: Callable[[], T], *, tried: bool = False
    ) -> T:
        """``attempt()`` (a create), asking the external store for room after each
        ``ObjectStoreFullError``; the error is raised once it has none to give."""
        if not tried:
            try:
                return attempt()
            except errors.ObjectStoreFullError as error:
                if not self._may_make_room(data_size):
                    raise
                self._announce_freed(getattr(error, "evicted", []))
        needed = Allocator.extent_size(data_size)
        while True:
            external = self._external
            if external is None:  # uninstalled meanwhile: fail as a plain store does
                return attempt()
            made_room = await external.make_room(needed)
            try:
                return attempt()
            except errors.ObjectStoreFullError as error:
                if not made_room:
                    raise
                self._announce_freed(getattr(error, "evicted", []))

    def _op_seal(self, connection, request_id, key):
        with self._lock:
            entry, freed = self._table.seal(_check_key(key), connection.client_id)
        self._announce_sealed(entry)
        self._announce_freed(freed)
        return True

    def _op_abort(self, connection, request_id, key):
        with self._lock:
            self._table.abort(_check_key(key), connection.client_id)
        return True

    def _op_get(self, connection, request_id, keys, timeout_ms=-1):
        if not request_id:  # it would pin objects the client never hears about
            raise errors.ProtocolError("GET needs a request id")
        if not isinstance(keys, list):
            raise TypeError("GET needs a list of object ids")
        keys = [_check_key(key) for key in keys]
        _check_int(timeout_ms, "timeout_ms", -1, 2**62)
        client = connection.client_id
        results: list = [None] * len(keys)
        missing = {}
        with self._lock:
            for index, key in enumerate(keys):
                entry = self._table.pin(key, client)
                if entry is None:
                    missing[index] = key
                else:
                    results[index] = [entry.offset, entry.data_size, entry.metadata]
            # Objects held outside memory exist: even a get that does not wait
            # waits for them to be restored.
            restoring = self._restorable(set(missing.values()))
            if timeout_ms == 0:
                missing = {i: key for i, key in missing.items() if key in restoring}
            if not missing:
                return results
            waiter = _GetWaiter(connection, request_id, keys, results, missing)
            connection.waiters.add(waiter)
            for key in set(missing.values()):
                self._waiters.setdefault(key, []).append(waiter)
        if timeout_ms > 0:
            waiter.timer = self._loop.call_later(timeout_ms / 1000, self._expire_waiter, waiter)
        for key in restoring:
            self._external.restore(ObjectID(key))
        return None

    def _restorable(self, keys: set[bytes]) -> list[bytes]:
        if self._external is None or not keys:
            return []
        return [key for key in keys if self._external.contains(ObjectID(key))]

    def _op_release(self, connection, request_id, key, count=1):
        _check_int(count, "count", 1, 2**62)
        with self._lock:
            freed = self._table.release(_check_key(key), connection.client_id, count)
        self._announce_freed(freed)
        return True

    def _op_delete(self, connection, request_id, keys):
        if not isinstance(keys, list):
            raise TypeError("DELETE needs a list of object ids")
        keys = [_check_key(key) for key in keys]
        freed = []
        with self._lock:
            for key in keys:
                freed += self._table.delete(key)
        self._announce_freed(freed)
        if self._external is not None:
            for key in keys:
                self._external.delete(ObjectID(key))
        return True

    def _op_contains(self, connection, request_id, key):
        with self._lock:
            return self._table.is_sealed(_check_key(key))

    def _op_list(self, connection, request_id):
        with self._lock:
            return [
                [e.key, e.data_size, len(e.metadata), e.pin_count, e.state.value, e.create_time]
                for e in self._table.entries()
            ]

    def _op_evict(self, connection, request_id, num_bytes):
        _check_int(num_bytes, "num_bytes", 0, 2**62)
        with self._lock:
            evicted = self._table.evict(num_bytes)
        self._announce_freed(evicted)
        return sum(entry.extent_bytes for entry in evicted)

    def _op_subscribe(self, connection, request_id):
        connection.subscribed = True
        return True

    _HANDLERS: dict[int, Callable[..., Any]] = {
        protocol.CREATE: _op_create,
        protocol.CREATE_AND_SEAL: _op_create_and_seal,
        protocol.SEAL: _op_seal,
        protocol.ABORT: _op_abort,
        protocol.GET: _op_get,
        protocol.RELEASE: _op_release,
        protocol.DELETE: _op_delete,
        protocol.CONTAINS: _op_contains,
        protocol.LIST: _op_list,
        protocol.EVICT: _op_evict,
        protocol.SUBSCRIBE: _op_subscribe,
        protocol.SLAB_LEASE: _op_slab_lease,
        protocol.CREATE_IN_SLAB: _op_create_in_slab,
    }

    # --- waiting gets -----------------------------------------------------------------
    def _wake_waiters(self, entry: ObjectEntry) -> None:
        with self._lock:
            waiters = self._waiters.pop(entry.key, ())
            for waiter in waiters:
                if waiter.done:
                    continue
                client = waiter.connection.client_id
                for index in [i for i, key in waiter.missing.items() if key == entry.key]:
                    pinned = self._table.pin(entry.key, client)
                    if pinned is None:  # deleted or evicted before we got here
                        continue
                    waiter.results[index] = [pinned.offset, pinned.data_size, pinned.metadata]
                    del waiter.missing[index]
                if not waiter.missing:
                    self._finish_waiter(waiter, reply=True)

    def _expire_waiter(self, waiter: _GetWaiter) -> None:
        with self._lock:
            if not waiter.done:
                self._finish_waiter(waiter, reply=True)

    def _finish_waiter(self, waiter: _GetWaiter, *, reply: bool) -> None:
        waiter.done = True
        if waiter.timer is not None:
            waiter.timer.cancel()
        waiter.connection.waiters.discard(waiter)
        for key in set(waiter.missing.values()):
            parked = self._waiters.get(key)
            if parked is not None and waiter in parked:
                parked.remove(waiter)
                if not parked:
                    del self._waiters[key]
        if reply:
            waiter.connection.send(
                protocol.encode([protocol.REPLY, waiter.request_id, protocol.OK, waiter.results])
            )

    # --- events ----------------------------------------------------------------------------
    def _on_loop_thread(self) -> bool:
        return self._loop is None or threading.get_ident() == self._loop_thread

    def _announce_sealed(self, entry: ObjectEntry) -> None:
        if self._loop is not None and not self._on_loop_thread():
            self._loop.call_soon_threadsafe(self._announce_sealed, entry)
            return
        if entry.key in self._waiters:
            self._wake_waiters(entry)
        self._notify(entry.key, entry.data_size, len(entry.metadata), "sealed")

    def _announce_freed(self, entries: list[ObjectEntry]) -> None:
        if not entries:
            return
        if self._loop is not None and not self._on_loop_thread():
            self._loop.call_soon_threadsafe(self._announce_freed, entries)
            return
        for entry in entries:
            self._notify(entry.key, -1, len(entry.metadata), "deleted")

    def _notify(self, key: bytes, data_size: int, metadata_size: int, event: str) -> None:
        frame = None
        for connection in list(self._connections.values()):
            if connection.subscribed:
                if frame is None:
                    frame = protocol.encode([protocol.NOTIFY, 0, key, data_size, metadata_size])
                connection.send(frame)
        if self._listeners:
            object_id = ObjectID(key)
            for listener in list(self._listeners):
                try:
                    listener(event, object_id, data_size)
                except Exception:
                    logger.exception("plasma store listener %r failed", listener)


def _check_key(key) -> bytes:
    if not isinstance(key, bytes) or len(key) != ID_SIZE:
        raise TypeError(f"an object id must be {ID_SIZE} bytes, got {key!r:.60}")
    return key


def _check_bytes(value, name: str) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    raise TypeError(f"{name} must be bytes, got {type(value).__name__}")


def _check_int(value, name: str, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer in [{low}, {high}], got {value!r:.40}")
    return value
