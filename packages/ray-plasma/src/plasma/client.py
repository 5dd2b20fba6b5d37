"""The plasma client: a blocking Unix socket to the store plus the mapped arena.

Requests are msgpack frames (see ``plasma.protocol``); seal, release and delete
are one-way, so the hot paths cost one round trip (``create``, ``get`` of an
object this client does not hold yet) or none (``seal``, ``release``, ``get`` of
an object this client already holds: answered from the local table, like Arrow's
plasma client did).

Pins. Every buffer handed out (``create``'s writable view, each ``get_buffers``
view) is a numpy view of the arena with a ``weakref.finalize``: the object stays
pinned in the store while the view, any slice of it, or any array deserialized
from it is alive. The last one to go releases the pin with a one-way message.
Finalizers may run on any thread (even inside a client call, from the garbage
collector), so they only queue the release; whoever holds the client lock next
sends it.

Thread safety. One lock guards the local tables and the sending side; replies
are read by whichever waiting thread gets there first (a leader/follower scheme)
and handed to their requesters by request id, so a ``get`` blocked on an object
that is not sealed yet does not stall other threads.

Waiting for a reply spins on a non-blocking ``recv`` for up to
``PLASMA_SPIN_US`` microseconds (default 100) before blocking: a blocking wake-up
costs ~25 us on this kind of machine, as much as the whole request.
"""

from __future__ import annotations

import itertools
import os
import socket
import threading
import time
import weakref
from collections import deque

import numpy as np

from plasma import arena, errors, protocol
from plasma._ids import ObjectID, as_key
from plasma.allocator import align_up
from plasma.serialization import deserialize, serialize

_SPIN_S = float(os.environ.get("PLASMA_SPIN_US", "100")) * 1e-6
_RECV_BYTES = 1 << 20
_POPULATE_ON_CREATE_BYTES = 4 * 2**20
_SLAB_BYTES = 1 * 2**20
_SLAB_OBJECT_MAX_BYTES = 16 * 2**10
_SLAB_AFTER_SMALL_CREATES = 8  # clients that create few small objects never take a slab
_SPIN_MISSES_BEFORE_PAUSE = 4
_BLOCKING_RECEIVES_BEFORE_RETRY = 256
_FLUSH_DELAY_S = float(os.environ.get("PLASMA_FLUSH_DELAY_US", "500")) * 1e-6


class _Held:
    """What this client knows about an object it holds pins on."""

    __slots__ = ("offset", "data_size", "metadata", "sealed", "store_pins", "holds")

    def __init__(self, offset: int, data_size: int, metadata: bytes, sealed: bool) -> None:
        self.offset = offset
        self.data_size = data_size
        self.metadata = metadata
        self.sealed = sealed
        self.store_pins = 0
        self.holds: dict[int, weakref.finalize] = {}


class PlasmaClient:
    """A connection to a plasma store. Create one with ``plasma.connect``."""

    def __init__(self, sock: socket.socket, socket_path: str, hello: list, arena_fd: int) -> None:
        self._sock = sock
        self._socket_path = socket_path
        _, _, self.client_id, arena_size, self._capacity = hello[:5]
        try:
            self._mm = arena.map_arena(arena_fd, arena_size)
        finally:
            os.close(arena_fd)
        self._arena = np.frombuffer(self._mm, dtype=np.uint8)
        self._arena_address = int(self._arena.ctypes.data)
        self._prefaulter = arena.Prefaulter(
            self._arena_address,
            arena_size,
            arena.prefault_limit("PLASMA_CLIENT_PREFAULT_BYTES"),
            nice=arena.prefault_nice(),
        )
        # "sync" (default): connect returns with this client's page tables populated, so
        # even its first big create copies at memcpy speed (connect takes ~0.1 s per GB);
        # "background": populate on a thread while the client is already in use.
        if os.environ.get("PLASMA_CLIENT_PREFAULT_MODE", "sync") == "background":
            self._prefaulter.start()
        else:
            self._prefaulter.run_here()
        self._lock = threading.Lock()
        self._cond = threading.Condition(threading.Lock())
        self._replies: dict[int, list] = {}
        self._reader_active = False
        self._connection_error: Exception | None = None
        self._frames = protocol.FrameBuffer()
        self._spin_s = _SPIN_S
        self._spin_misses = 0
        # recv into one reusable buffer: recv(1 MiB) would allocate (and, for a 1 MiB
        # request, mmap/munmap) a fresh megabyte per call, even one that finds nothing.
        self._rbuf = bytearray(_RECV_BYTES)
        self._rview = memoryview(self._rbuf)
        self._blocking_receives = 0
        self._async_errors: list[tuple[bytes, Exception]] = []
        self._slab_lock = threading.Lock()
        self._slab: list[int] | None = None  # [next offset, end] of this client's slab
        self._small_creates = 0
        self._slab_bytes = min(_SLAB_BYTES, self._capacity // 64) // 64 * 64
        self._slab_object_max_bytes = (
            min(_SLAB_OBJECT_MAX_BYTES, self._slab_bytes // 4) if self._slab_bytes >= 4096 else -1
        )
        self._request_ids = itertools.count(1)
        self._hold_ids = itertools.count(1)
        self._held: dict[bytes, _Held] = {}
        self._unsealed: set[bytes] = set()
        self._dead_holds: deque = deque()
        self._closed = False
        self._notifications: _NotificationChannel | None = None
        # One-way messages wait here and ride along with the next request (or
        # are sent by the flusher thread within _FLUSH_DELAY_S): every separate
        # send wakes the store, which costs as much as the message itself.
        self._outbox: list[bytes] = []
        self._outbox_ready = threading.Event()
        self._flusher = threading.Thread(target=self._flush_loop, name="plasma-flush", daemon=True)
        self._flusher.start()

    # --- objects: create / seal / abort ------------------------------------------------
    def create(self, object_id, data_size: int, metadata: bytes = b"") -> memoryview:
        """Allocate an object and return a writable view of its ``data_size`` bytes.

        Write the data, then ``seal``. Raises ``ObjectExistsError`` or
        ``ObjectStoreFullError``. Small objects from a client that creates many
        are placed in a slab without a round trip (see ``plasma.object_table``);
        for those, an id that another client already used is reported (as
        ``ObjectExistsError``) by this client's next call that talks to the store,
        and the local copy is dropped.
        """
        key = as_key(object_id)
        data_size = int(data_size)
        metadata = bytes(metadata)
        if data_size <= self._slab_object_max_bytes:
            view = self._create_in_slab(key, data_size, metadata)
            if view is not None:
                return view
        offset = self._call(protocol.CREATE, key, data_size, metadata)
        if data_size >= _POPULATE_ON_CREATE_BYTES and not self._prefaulter.covers(
            offset + data_size
        ):
            arena.populate_parallel(self._arena_address + offset, data_size)
        with self._locked():
            held = _Held(offset, int(data_size), bytes(metadata), sealed=False)
            held.store_pins = 1
            self._held[key] = held
            self._unsealed.add(key)
            return self._new_hold(key, held, writable=True)

    def _create_in_slab(self, key: bytes, data_size: int, metadata: bytes):
        with self._slab_lock:
            self._small_creates += 1
            if self._small_creates < _SLAB_AFTER_SMALL_CREATES:
                return None
            self._raise_async_error()
            if key in self._held or key in self._unsealed:
                raise errors.ObjectExistsError(key.hex())
            extent = align_up(max(data_size, 1))
            slab = self._slab
            if slab is None or slab[0] + extent > slab[1]:
                try:
                    offset, size = self._call(protocol.SLAB_LEASE, self._slab_bytes)
                except errors.ObjectStoreFullError:
                    self._slab = None
                    return None
                slab = self._slab = [offset, offset + size]
            offset = slab[0]
            slab[0] += extent
            with self._locked():
                self._queue(
                    protocol.encode([protocol.CREATE_IN_SLAB, 0, key, offset, data_size, metadata])
                )
                held = _Held(offset, data_size, metadata, sealed=False)
                held.store_pins = 1
                self._held[key] = held
                self._unsealed.add(key)
                return self._new_hold(key, held, writable=True)

    def _raise_async_error(self) -> None:
        """Raise what the store reported about earlier one-way creates (if anything)."""
        if not self._async_errors:
            return
        with self._cond:
            failed, self._async_errors = self._async_errors, []
        with self._locked():
            for key, _error in failed:
                self._unsealed.discard(key)
                held = self._held.pop(key, None)
                if held is not None:  # the store never pinned it: nothing to release
                    for finalizer in held.holds.values():
                        finalizer.detach()
        raise failed[0][1]

    def seal(self, object_id, *, flush: bool = True) -> None:
        """Make an object this client created immutable and visible to every client.

        With ``flush=False`` the seal message is batched with this client's next
        request (or sent within a millisecond): cheaper, but other clients may not
        see the object sealed the moment ``seal`` returns.
        """
        key = as_key(object_id)
        with self._locked():
            if key not in self._unsealed:
                raise errors.ObjectNotFoundError(
                    key.hex(), "seal needs an object this client created and has not sealed"
                )
            self._unsealed.discard(key)
            held = self._held.get(key)
            if held is not None:
                held.sealed = True
            self._queue(protocol.encode([protocol.SEAL, 0, key]))
            if flush:
                self._send(b"")

    def abort(self, object_id) -> None:
        """Discard an unsealed object this client created; its space is freed."""
        key = as_key(object_id)
        with self._locked():
            if key not in self._unsealed:
                raise errors.ObjectNotFoundError(
                    key.hex(), "abort needs an object this client created and has not sealed"
                )
            self._unsealed.discard(key)
            self._forget(key)
        self._call(protocol.ABORT, key)

    def create_and_seal(self, object_id, data, metadata: bytes = b"") -> None:
        """Create, fill and seal an object in one message (small objects); not pinned after."""
        key = as_key(object_id)
        view = memoryview(data).cast("B") if not isinstance(data, bytes) else data
        if len(view) > protocol.MAX_INLINE_BYTES:
            buffer = self.create(object_id, len(view), metadata)
            np.copyto(np.frombuffer(buffer, np.uint8), np.frombuffer(view, np.uint8))
            del buffer
            self.seal(object_id)
            self.release(object_id)
            return
        self._call(protocol.CREATE_AND_SEAL, key, bytes(view), bytes(metadata))

    # --- objects: read -----------------------------------------------------------------
    def get_buffers(self, object_ids, timeout_ms: int = -1, with_meta: bool = False) -> list:
        """Zero-copy read-only views of sealed objects, waiting up to ``timeout_ms``.

        ``timeout_ms=-1`` waits forever, ``0`` does not wait. An object not sealed in
        time gives ``None``. With ``with_meta`` each item is ``(view, metadata)``.
        Each object stays pinned while its view (or anything made from it) lives.
        """
        keys = [as_key(object_id) for object_id in object_ids]
        self._raise_async_error()
        results: list = [None] * len(keys)
        misses = []
        with self._locked():
            for index, key in enumerate(keys):
                held = self._held.get(key)
                if held is not None and held.sealed:
                    results[index] = (self._new_hold(key, held, writable=False), held.metadata)
                else:
                    misses.append(index)
            if misses:
                request_id = next(self._request_ids)
                wanted = [keys[index] for index in misses]
                self._send(protocol.encode([protocol.GET, request_id, wanted, int(timeout_ms)]))
        if misses:
            found = self._wait_reply(request_id)
            with self._locked():
                for index, item in zip(misses, found):
                    if item is not None:
                        results[index] = self._adopt_pin(keys[index], *item)
        if with_meta:
            return results
        return [None if item is None else item[0] for item in results]

    def contains(self, object_id) -> bool:
        """Whether the store holds a *sealed* object with this id."""
        return bool(self._call(protocol.CONTAINS, as_key(object_id)))

    def list(self) -> dict[ObjectID, dict]:
        """Every object in the store, with its sizes, pin count, state and creation time."""
        return {
            ObjectID(key): {
                "data_size": data_size,
                "metadata_size": metadata_size,
                "ref_count": ref_count,
                "state": state,
                "create_time": create_time,
            }
            for key, data_size, metadata_size, ref_count, state, create_time in self._call(
                protocol.LIST
            )
        }

    # --- objects: Python values --------------------------------------------------------
    def put(self, value, object_id=None) -> ObjectID:
        """Serialize ``value`` into the store (numpy buffers are copied straight in)."""
        object_id = ObjectID.from_random() if object_id is None else object_id
        serialized = serialize(value)
        # create + write + seal: for small values from a busy client this costs no
        # round trip at all (slab placement), otherwise one, like create_and_seal.
        buffer = self.create(object_id, serialized.total_bytes, serialized.metadata)
        try:
            serialized.write_to(buffer)
        except BaseException:
            del buffer
            self.abort(object_id)
            raise
        del buffer
        self.seal(object_id)
        self.release(object_id)
        return object_id

    def get(self, object_ids, timeout_ms: int = -1):
        """Deserialized values; ``plasma.ObjectNotAvailable`` for those not ready in time.

        Accepts one id (returns one value) or a list of ids (returns a list).
        numpy arrays come back read-only, pointing into shared memory.
        """
        single = not isinstance(object_ids, list | tuple)
        ids = [object_ids] if single else object_ids
        values = [
            errors.ObjectNotAvailable if item is None else deserialize(item[0], item[1])
            for item in self.get_buffers(ids, timeout_ms, with_meta=True)
        ]
        return values[0] if single else values

    # --- pins and lifetime --------------------------------------------------------------
    def release(self, object_id) -> None:
        """Give up every pin this client holds on the object now.

        Views obtained earlier must not be used afterwards: the store may evict the
        object and reuse its memory.
        """
        key = as_key(object_id)
        with self._locked():
            self._forget(key)

    def delete(self, object_ids) -> None:
        """Delete objects; each goes once no client holds it any more."""
        if not isinstance(object_ids, list | tuple):
            object_ids = [object_ids]
        keys = [as_key(object_id) for object_id in object_ids]
        with self._locked():
            self._queue(protocol.encode([protocol.DELETE, 0, keys]))

    def flush(self) -> None:
        """Send batched one-way messages (seals with ``flush=False``, releases, deletes) now."""
        with self._locked():
            if self._outbox:
                self._send(b"")

    def evict(self, num_bytes: int) -> int:
        """Evict unpinned objects, least recently used first; returns the bytes freed."""
        return int(self._call(protocol.EVICT, int(num_bytes)))

    def store_capacity(self) -> int:
        return self._capacity

    def wait_prefaulted(self, timeout_s: float | None = None) -> bool:
        """Block until this client's background page-table population is done."""
        return self._prefaulter.wait(timeout_s)

    # --- notifications -------------------------------------------------------------------
    def subscribe(self) -> None:
        """Start receiving "sealed"/"deleted" notifications (see ``get_next_notification``)."""
        if self._notifications is None:
            self._notifications = _NotificationChannel(self._socket_path)

    def get_next_notification(self, timeout_s: float | None = None):
        """``(object_id, data_size, metadata_size)`` of the next event; ``data_size`` is
        -1 for a deletion. Returns None if nothing arrives within ``timeout_s``."""
        if self._notifications is None:
            raise errors.PlasmaError("call subscribe() before get_next_notification()")
        return self._notifications.next(timeout_s)

    def disconnect(self) -> None:
        """Close the connection; the store releases everything this client held."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._outbox.clear()
            self._outbox_ready.set()
            for held in self._held.values():
                for finalizer in held.holds.values():
                    finalizer.detach()
            self._held.clear()
            self._dead_holds.clear()
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        if self._notifications is not None:
            self._notifications.close()
        self._prefaulter.stop()
        self._flusher.join()
        del self._arena
        try:
            self._mm.close()
        except BufferError:
            pass  # views are still alive; the mapping goes when they do

    def __enter__(self) -> PlasmaClient:
        return self

    def __exit__(self, *exc_info) -> None:
        self.disconnect()

    def __repr__(self) -> str:
        return f"PlasmaClient({self._socket_path!r}, client_id={self.client_id})"

    # --- internals: holds --------------------------------------------------------------
    def _new_hold(self, key: bytes, held: _Held, *, writable: bool) -> memoryview:
        array = self._arena[held.offset : held.offset + held.data_size]
        if not writable:
            array.flags.writeable = False
        hold_id = next(self._hold_ids)
        finalizer = weakref.finalize(array, self._hold_died, key, hold_id)
        finalizer.atexit = False
        held.holds[hold_id] = finalizer
        return memoryview(array)

    def _adopt_pin(self, key: bytes, offset: int, data_size: int, metadata: bytes):
        held = self._held.get(key)
        if held is None:
            held = self._held[key] = _Held(offset, data_size, metadata, sealed=True)
        held.sealed = True
        held.store_pins += 1
        return self._new_hold(key, held, writable=False), metadata

    def _forget(self, key: bytes) -> None:
        """Drop every local hold on ``key`` and give its pins back (lock held)."""
        held = self._held.pop(key, None)
        if held is None:
            return
        for finalizer in held.holds.values():
            finalizer.detach()
        if held.store_pins:
            self._queue(protocol.encode([protocol.RELEASE, 0, key, held.store_pins]))

    def _hold_died(self, key: bytes, hold_id: int) -> None:
        self._dead_holds.append((key, hold_id))
        if self._lock.acquire(blocking=False):
            self._unlock()

    def _flush_dead_holds(self) -> None:
        while self._dead_holds:
            key, hold_id = self._dead_holds.popleft()
            held = self._held.get(key)
            if held is None or held.holds.pop(hold_id, None) is None or held.holds:
                continue
            del self._held[key]
            if not self._closed:
                self._queue(protocol.encode([protocol.RELEASE, 0, key, held.store_pins]))

    def _unlock(self) -> None:
        """Release the lock, sending releases queued by finalizers meanwhile."""
        try:
            self._flush_dead_holds()
        finally:
            self._lock.release()
        if self._dead_holds and self._lock.acquire(blocking=False):
            self._unlock()

    def _locked(self):
        return _ClientLock(self)

    # --- internals: messages -------------------------------------------------------------
    def _queue(self, frame: bytes) -> None:
        """Batch a one-way message (lock held)."""
        self._outbox.append(frame)
        if len(self._outbox) == 1:
            self._outbox_ready.set()

    def _send(self, frame: bytes) -> None:
        """Send ``frame`` after everything batched (lock held)."""
        if self._closed:
            raise errors.StoreConnectionError("this plasma client is disconnected")
        if self._outbox:
            self._outbox.append(frame)
            frame = b"".join(self._outbox)
            self._outbox.clear()
        try:
            self._sock.sendall(frame)
        except OSError as error:
            raise errors.StoreConnectionError(f"lost the connection to the store: {error}")

    def _flush_loop(self) -> None:
        while True:
            self._outbox_ready.wait()
            if self._closed:
                return
            time.sleep(_FLUSH_DELAY_S)
            with self._lock:
                if self._closed:
                    return
                self._outbox_ready.clear()
                if self._outbox and not self._closed:
                    try:
                        self._send(b"")
                    except errors.StoreConnectionError:
                        self._outbox.clear()  # the store is gone, and with it every pin

    def _call(self, op: int, *args):
        self._raise_async_error()
        with self._locked():
            request_id = next(self._request_ids)
            self._send(protocol.encode([op, request_id, *args]))
        return self._wait_reply(request_id)

    def _wait_reply(self, request_id: int):
        with self._cond:
            while True:
                message = self._replies.pop(request_id, None)
                if message is not None:
                    break
                if self._connection_error is not None:
                    raise self._connection_error
                if not self._reader_active:
                    self._reader_active = True
                    break
                self._cond.wait()
        if message is None:
            message = self._read_until(request_id)
        _, _, status, payload = message
        if status != protocol.OK:
            raise protocol.error_from_reply(status, payload)
        return payload

    def _read_until(self, request_id: int) -> list:
        mine = None
        try:
            while mine is None:
                for body in self._receive_frames():
                    message = protocol.decode(body)
                    if message[0] == protocol.ASYNC_ERROR:
                        _, _, key, code, args = message
                        with self._cond:
                            self._async_errors.append((key, protocol.error_from_reply(code, args)))
                        continue
                    if message[0] != protocol.REPLY:
                        continue
                    if message[1] == request_id:
                        mine = message
                    else:
                        with self._cond:
                            self._replies[message[1]] = message
                            self._cond.notify_all()
            return mine
        except (OSError, errors.PlasmaError) as error:
            if not isinstance(error, errors.StoreConnectionError):
                error = errors.StoreConnectionError(f"lost the connection to the store: {error}")
            with self._cond:
                self._connection_error = error
            raise error
        finally:
            with self._cond:
                self._reader_active = False
                self._cond.notify_all()

    def _receive_frames(self) -> list[bytes]:
        while True:
            data = self._receive()
            if not data:
                detail = self._replies.get(0)
                reason = f": {detail[3]}" if detail else ""
                raise errors.StoreConnectionError(f"the plasma store closed the connection{reason}")
            frames = self._frames.feed(data)
            if frames:
                return frames

    def _receive(self) -> bytes:
        """One recv: spin briefly first, unless spinning has not paid off lately.

        Spinning only helps when the store has a core of its own; on an
        oversubscribed machine it steals the store's CPU. So after a few spins in a
        row that end in a blocking recv anyway, stop spinning for a while.
        """
        if self._spin_s:
            spin_until = time.perf_counter() + self._spin_s
            while True:
                try:
                    n = self._sock.recv_into(self._rbuf, 0, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    if time.perf_counter() < spin_until:
                        continue
                    break
                self._spin_misses = 0
                return bytes(self._rview[:n])
            self._spin_misses += 1
            if self._spin_misses >= _SPIN_MISSES_BEFORE_PAUSE:
                self._spin_s = 0.0
                self._blocking_receives = 0
        else:
            self._blocking_receives += 1
            if self._blocking_receives >= _BLOCKING_RECEIVES_BEFORE_RETRY:
                self._spin_s = _SPIN_S
                self._spin_misses = 0
        n = self._sock.recv_into(self._rbuf)
        return bytes(self._rview[:n])


class _ClientLock:
    """``with client._locked():`` that flushes queued releases on the way out."""

    __slots__ = ("_client",)

    def __init__(self, client: PlasmaClient) -> None:
        self._client = client

    def __enter__(self) -> None:
        self._client._lock.acquire()

    def __exit__(self, *exc_info) -> None:
        self._client._unlock()


class _NotificationChannel:
    """A second connection on which the store pushes sealed/deleted events."""

    def __init__(self, socket_path: str) -> None:
        self._sock, _hello, fd = _open_connection(socket_path, timeout_s=10.0)
        os.close(fd)
        self._frames = protocol.FrameBuffer()
        self._pending: deque = deque()
        self._lock = threading.Lock()
        self._sock.sendall(protocol.encode([protocol.SUBSCRIBE, 1]))
        while True:  # wait for the acknowledgement, so no later event is missed
            message = self._next_message(None)
            if message[0] == protocol.REPLY:
                break

    def next(self, timeout_s: float | None):
        with self._lock:
            message = self._next_message(timeout_s)
        if message is None:
            return None
        _, _, key, data_size, metadata_size = message
        return ObjectID(key), data_size, metadata_size

    def _next_message(self, timeout_s: float | None):
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while not self._pending:
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            if remaining == 0.0:
                return None
            self._sock.settimeout(remaining)
            try:
                data = self._sock.recv(_RECV_BYTES)
            except TimeoutError:
                return None
            if not data:
                raise errors.StoreConnectionError("the plasma store closed the connection")
            self._pending.extend(protocol.decode(body) for body in self._frames.feed(data))
        return self._pending.popleft()

    def close(self) -> None:
        self._sock.close()


def _open_connection(socket_path: str, *, timeout_s: float) -> tuple[socket.socket, list, int]:
    deadline = time.monotonic() + timeout_s
    delay_s = 0.005
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(socket_path)
            break
        except (FileNotFoundError, ConnectionRefusedError) as error:
            sock.close()
            if time.monotonic() >= deadline:
                raise errors.StoreConnectionError(
                    f"could not connect to the plasma store at {socket_path!r} within "
                    f"{timeout_s} s ({error}); is `plasma_store -s {socket_path}` running?"
                ) from None
            time.sleep(delay_s)
            delay_s = min(delay_s * 2, 0.1)
    sock.settimeout(max(deadline - time.monotonic(), 1.0))
    try:
        data, fds, _flags, _addr = socket.recv_fds(sock, 4096, 1)
    except OSError as error:
        sock.close()
        raise errors.StoreConnectionError(f"the plasma store did not greet us: {error}")
    sock.settimeout(None)
    frames = protocol.FrameBuffer().feed(data)
    if not fds or not frames:
        sock.close()
        for fd in fds:
            os.close(fd)
        raise errors.StoreConnectionError(f"unexpected greeting from {socket_path!r}")
    hello = protocol.decode(frames[0])
    if hello[0] != protocol.HELLO:
        sock.close()
        raise errors.StoreConnectionError(
            f"unexpected greeting from {socket_path!r}: {hello!r:.80}"
        )
    return sock, hello, fds[0]


def connect(store_socket_name: str, *, timeout_s: float = 10.0) -> PlasmaClient:
    """Connect to the store listening on ``store_socket_name`` (retrying up to ``timeout_s``)."""
    sock, hello, fd = _open_connection(store_socket_name, timeout_s=timeout_s)
    return PlasmaClient(sock, store_socket_name, hello, fd)
