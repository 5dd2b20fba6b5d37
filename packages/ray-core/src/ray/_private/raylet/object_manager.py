"""Node-to-node object transfer: pull an object from another raylet into the local store.

Each raylet runs a transfer server (its ``object_manager_port``); the wire protocol is
in ``transfer_wire``. A puller asks the node that holds the object; the bytes go from
the holder's arena file to the socket with ``sendfile`` (the kernel reads the store's
pages, nothing is copied through Python) and the puller ``recv_into``\\ s them straight
into a freshly created object in its own arena, whose page tables it populates just
ahead of the data. An object this node has spilled to disk is served from its file the
same way. Under TLS the bytes pass through the encryption in chunks instead.

Broadcasts. A copy being received here is an ``Incoming``: what has arrived is served
on at once to other pullers, before the rest comes. A holder already sending an object
to ``FANOUT`` pullers sends the next one to one of those (``Redirect``), which may pass
it further down: the pullers of one object form a tree of pipelined transfers, so a
node's link carries the object ``FANOUT`` times instead of once per puller. A relay
that fails sends its pullers back to the holder, which then serves them itself (from
the start: bytes the kernel still held by reference to the failed copy's pages may
have been overwritten).

Socket I/O happens on helper threads, every store and bookkeeping operation on the
raylet's event loop. Concurrent pulls of one object here share a single transfer.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import socket
import ssl
import struct
import threading
import time
from dataclasses import dataclass, field

from plasma.errors import ObjectStoreFullError
from ray._private import auth, profiling
from ray._private.gcs import keys
from ray._private.raylet.transfer_wire import (
    ACK,
    Missing,
    PullRequest,
    Redirect,
    Sending,
    pack_reply,
    read_reply,
    recv_exact,
)

logger = logging.getLogger(__name__)

# How long a bundle waits for room held by objects other readers have pinned (they
# release them when they finish) before its reader gets the store-full error.
_BUNDLE_ROOM_WAIT_S = 60.0
FANOUT = 2  # sends of one object at once from one node; more pullers go to relays
_RELAY_MIN_BYTES = 8 * 2**20  # smaller objects are always sent by their holder
_MAX_HOPS = 8  # redirects a puller follows before it insists on the holder
_CHUNK_BYTES = 4 * 2**20  # receive granularity: what a relay waits for at most
_IO_TIMEOUT_S = 60.0  # a peer that neither sends nor takes bytes for this long is gone
_STALL_S = 60.0  # a relay whose own transfer makes no progress for this long gives up


class Incoming:
    """A copy being received here; what has arrived can be served on already.

    ``received`` advances on the receiving thread; relay threads wait for it. ``readers``
    and ``pins_owed`` are the event loop's: how many relay sends read this copy, and how
    many of them hold a store pin taken for them when it was sealed."""

    def __init__(self, object_id: bytes, size: int, metadata: bytes, arena_offset: int):
        self.object_id = object_id
        self.size = size
        self.metadata = metadata
        self.arena_offset = arena_offset
        self.received = 0
        self.failed = False
        self.readers = 0
        self.pins_owed = 0
        self._cond = threading.Condition()

    def arrived(self, upto: int) -> None:
        with self._cond:
            self.received = upto
            self._cond.notify_all()

    def fail(self) -> None:
        with self._cond:
            self.failed = True
            self._cond.notify_all()

    def wait_beyond(self, pos: int) -> int:
        """How far the copy has arrived, once past ``pos`` (ConnectionError if its own
        transfer failed or stalled)."""
        with self._cond:
            while self.received <= pos and not self.failed:
                if not self._cond.wait(_STALL_S):
                    raise ConnectionError("the relay's own transfer stalled")
            if self.failed:
                raise ConnectionError("the relay's own transfer failed")
            return self.received


@dataclass
class _Relay:
    ip: str
    port: int
    assigned: int = 0


@dataclass
class _Fanout:
    """This node's sends of one object now, and the pullers among them that relay."""

    active: int = 0
    relays: list[_Relay] = field(default_factory=list)


@dataclass(frozen=True)
class _FromMemory:
    """A sealed copy in this node's store, pinned while it is sent."""

    offset: int
    size: int
    metadata: bytes


@dataclass(frozen=True)
class _FromFile:
    """A copy this node spilled: an open descriptor of its file (closed afterwards)."""

    fd: int
    offset: int
    size: int
    metadata: bytes


@dataclass(frozen=True)
class _FromIncoming:
    incoming: Incoming

    @property
    def size(self) -> int:
        return self.incoming.size

    @property
    def metadata(self) -> bytes:
        return self.incoming.metadata


_Source = _FromMemory | _FromFile | _FromIncoming


class ObjectManager:
    """This node's side of object movement: serves its objects and pulls others'.

    Collaborators: the node's plasma ``store``, its ``local_objects`` (which copies are
    primaries, spilled or pulled), the ``gcs`` client (where other nodes serve), and
    ``trace`` (None, or how to record a transfer for the timeline)."""

    def __init__(self, *, store, local_objects, gcs, node_ip: str, port: int = 0,
                 trace: _TransferTrace | None = None):
        self.loop = asyncio.get_running_loop()
        self.store = store
        self.local_objects = local_objects
        self.gcs = gcs
        self.trace = trace
        self.node_ip = node_ip
        self._inflight: dict[bytes, asyncio.Task] = {}
        self._incoming: dict[bytes, Incoming] = {}
        self._fanouts: dict[bytes, _Fanout] = {}
        self._bundle_lock = asyncio.Lock()
        self.server = TransferServer(self, node_ip, port)

    @property
    def port(self) -> int:
        return self.server.port

    def stop(self) -> None:
        self.server.stop()

    def sends_of(self, object_id: bytes) -> int:
        """How many sends of ``object_id`` this node's server runs now (on the loop)."""
        fanout = self._fanouts.get(object_id)
        return 0 if fanout is None else fanout.active

    # -- serving (on the loop) ------------------------------------------------------------
    def open_source(self, request: PullRequest, peer_ip: str) -> _Source | Redirect | None:
        """Where to serve ``request`` from (pinned or opened), a relay to send it to, or
        None when the object is not here."""
        object_id = request.object_id
        fanout = self._fanouts.get(object_id)
        if (request.may_redirect and request.relay_port and fanout is not None
                and fanout.active >= FANOUT and fanout.relays):
            target = min(fanout.relays, key=lambda r: r.assigned)
            target.assigned += 1
            return Redirect(target.ip, target.port)
        source = self._source(object_id)
        if source is None:
            return None
        if fanout is None:
            fanout = self._fanouts[object_id] = _Fanout()
        fanout.active += 1
        if request.relay_port and source.size >= _RELAY_MIN_BYTES:
            fanout.relays.append(_Relay(peer_ip, request.relay_port))
        return source

    def _source(self, object_id: bytes) -> _Source | None:
        extent = self.store.get_local_extent(object_id)
        if extent is not None:
            return _FromMemory(*extent)
        spilled = self.local_objects.open_spilled(object_id)
        if spilled is not None:
            fd, copy = spilled
            return _FromFile(fd, copy.data_offset, copy.data_size, copy.metadata)
        incoming = self._incoming.get(object_id)
        if incoming is not None:
            incoming.readers += 1
            return _FromIncoming(incoming)
        return None

    def close_source(self, object_id: bytes, source: _Source) -> None:
        """The send from ``source`` ended: unpin, close, and leave the fan-out."""
        if isinstance(source, _FromMemory):
            self.store.release_local(object_id)
        elif isinstance(source, _FromFile):
            os.close(source.fd)
        else:
            incoming = source.incoming
            incoming.readers -= 1
            if incoming.pins_owed:
                incoming.pins_owed -= 1
                self.store.release_local(object_id)
        fanout = self._fanouts.get(object_id)
        if fanout is not None:
            fanout.active -= 1
            if fanout.active <= 0:
                del self._fanouts[object_id]

    # -- pulling ---------------------------------------------------------------------------
    async def fetch(self, object_id: bytes, node_id: bytes) -> tuple | None:
        """Bring ``object_id`` from node ``node_id`` into this node's store (raises on
        failure). The address of the transfer server that sent it (the holder's, or a
        relay's), or None when it was here already or another pull brought it."""
        return await asyncio.shield(self._shared_transfer(object_id, node_id))

    async def pull(self, object_id: bytes, node_id: bytes, deferred) -> None:
        """``fetch`` for a reader's RPC: its outcome goes to ``deferred``. On success the
        copy stays pinned here for the reader until it says it has read it
        (``release_pulled``)."""
        try:
            await self.fetch(object_id, node_id)
            self._claim([object_id])
            deferred.resolve(True)
        except Exception as exc:  # noqa: BLE001 - logged and handed to the requester
            logger.warning("pull of %s from %s failed: %s", object_id.hex(), node_id.hex()[:8],
                           exc)
            deferred.reject(exc)

    async def pull_bundle(self, pairs: list, deferred) -> None:
        """Pull what one reader needs at once (a task's arguments, one ``ray.get``) as a
        unit, one bundle at a time on this node: two readers that each got part of theirs
        would otherwise fill the store with what they hold and wait on each other (Ray's
        pull manager admits whole bundles for the same reason). ``pairs``: [object id,
        node id]."""
        try:
            async with self._bundle_lock:
                deadline = self.loop.time() + _BUNDLE_ROOM_WAIT_S
                while True:
                    try:
                        await asyncio.gather(*(asyncio.shield(self._shared_transfer(oid, nid))
                                               for oid, nid in pairs))
                        self._claim([oid for oid, _ in pairs])
                        break
                    except ObjectStoreFullError:
                        # The rest of the store is pinned by readers that hold their whole
                        # sets (a bundle that got in first): wait for them to finish, as
                        # Ray's pull manager waits for room (what arrived stays).
                        if self.loop.time() > deadline:
                            raise
                        await asyncio.sleep(0.05)
            deferred.resolve(True)
        except Exception as exc:  # noqa: BLE001 - logged and handed to the requester
            logger.warning("pull of %d objects failed: %s", len(pairs), exc)
            deferred.reject(exc)

    def _claim(self, object_ids: list) -> None:
        """Pin the fetched copies for their reader (``LocalObjectManager.claim_pulled``)."""
        for object_id in object_ids:
            if not self.local_objects.claim_pulled(object_id):
                raise KeyError(f"object {object_id.hex()} was evicted before it was read")

    def release_pulled(self, object_ids: list) -> None:
        """A reader has read (pinned itself) what it pulled: the copies here it held
        become evictable secondary copies."""
        for object_id in object_ids:
            self.local_objects.release_pulled(object_id)

    def _shared_transfer(self, object_id: bytes, node_id: bytes) -> asyncio.Future:
        """The transfer of ``object_id`` here (concurrent pulls of one object share it)."""
        task = self._inflight.get(object_id)
        if task is None:
            task = asyncio.ensure_future(self._transfer(object_id, node_id))
            self._inflight[object_id] = task
            task.add_done_callback(lambda _t: self._inflight.pop(object_id, None))
        return task

    async def _transfer(self, object_id: bytes, node_id: bytes) -> tuple | None:
        store = self.store
        if store.contains_local(object_id):
            return None
        info = self.gcs.hget_obj(keys.NODES, node_id.hex())
        if not info or not info.get("alive", True):
            raise ConnectionError(f"node {node_id.hex()[:8]} is not alive")
        holder = (info["node_ip"], info["object_transfer_port"])
        started = time.time()
        opened = await self.loop.run_in_executor(None, _open, holder, object_id, self.port,
                                                 self.node_ip)
        if opened is None:
            raise KeyError(f"object {object_id.hex()} is not on node {node_id.hex()[:8]}")
        sock, sending, source = opened
        secondary = self.local_objects.secondary
        secondary.add(object_id)
        try:
            buf = await store.create_local_when_room(object_id, sending.size, sending.metadata)
        except BaseException:
            sock.close()
            secondary.discard(object_id)
            raise
        incoming = Incoming(object_id, sending.size, sending.metadata,
                            store.local_offset(object_id))
        self._incoming[object_id] = incoming
        try:
            source = await self.loop.run_in_executor(
                None, self._receive, sock, buf, incoming, source, holder)
        except BaseException:
            incoming.fail()
            del self._incoming[object_id]
            buf.release()
            store.abort_local(object_id)
            secondary.discard(object_id)
            raise
        del self._incoming[object_id]
        buf.release()
        store.seal_local(object_id)
        for _ in range(incoming.readers):  # relays still sending it hold it in memory
            store.get_local_extent(object_id)
        incoming.pins_owed = incoming.readers
        self.local_objects.pulled(object_id)  # the creator's pin, for a requester to claim
        if self.trace is not None:
            self.trace.record(object_id, sending.size, info, source, started)
        return source

    def _receive(self, sock: socket.socket, buf: memoryview, incoming: Incoming,
                 sender: tuple, holder: tuple) -> tuple:
        """Fill ``buf`` from ``sock`` (on a helper thread); returns who sent it all. A
        relay that fails sends us back to the holder, which then serves it whole."""
        try:
            _receive_into(sock, buf, incoming, self.store)
            return sender
        except (OSError, ConnectionError) as exc:
            if sender == holder:
                raise
            logger.info("relay of %s failed (%s): pulling it from its holder",
                        incoming.object_id.hex(), exc)
            # What we served on of it may be wrong too: our pullers go to the holder.
            incoming.fail()
            sock, reply = _request(holder, PullRequest(incoming.object_id), self.node_ip)
            if not isinstance(reply, Sending):
                raise ConnectionError(f"object {incoming.object_id.hex()} is no longer on "
                                      f"its holder {holder[0]}:{holder[1]}") from exc
            _receive_into(sock, buf, incoming, self.store)
            return holder


def _receive_into(sock: socket.socket, buf: memoryview, incoming: Incoming, store) -> None:
    size = incoming.size
    try:
        view = buf.cast("B")
        flags = 0 if isinstance(sock, ssl.SSLSocket) else socket.MSG_WAITALL
        pos = 0
        while pos < size:
            n = min(size - pos, _CHUNK_BYTES)
            store.populate_range(incoming.arena_offset + pos, n)  # no fault per page
            got = sock.recv_into(view[pos:pos + n], n, flags)
            if got == 0:
                raise ConnectionError("transfer connection closed early")
            pos += got
            incoming.arrived(pos)
        sock.sendall(ACK)
    finally:
        sock.close()


def _request(address: tuple, request: PullRequest, node_ip: str | None = None
             ) -> tuple[socket.socket, Sending | Redirect | Missing]:
    """Connect to the transfer server at ``address`` and ask; the socket stays open only
    when the data follows. From ``node_ip`` when given: the address a relaying
    requester serves on is the one the server sees."""
    raw = socket.create_connection(address, timeout=30,
                                   source_address=(node_ip, 0) if node_ip else None)
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:  # TLS (when on), then the mutual secret handshake
        sock = auth.connect(raw, f"object transfer server {address[0]}:{address[1]}")
    except BaseException:
        raw.close()
        raise
    try:
        sock.sendall(request.pack())
        reply = read_reply(sock)
    except BaseException:
        sock.close()
        raise
    if not isinstance(reply, Sending):
        sock.close()
    else:
        _blocking_with_timeouts(sock)
    return sock, reply


def _open(holder: tuple, object_id: bytes, relay_port: int, node_ip: str
          ) -> tuple[socket.socket, Sending, tuple] | None:
    """Ask the object's holder, following its redirects to relays; a relay that cannot
    serve sends us back to the holder, asked then not to redirect. ``(socket, what is
    sent, who sends it)``, or None when the holder does not have it."""
    address, may_redirect = holder, True
    for hop in range(_MAX_HOPS + 2):
        request = PullRequest(object_id, relay_port=relay_port,
                              may_redirect=may_redirect and hop < _MAX_HOPS)
        try:
            sock, reply = _request(address, request, node_ip)
        except (OSError, ConnectionError):
            if address == holder:
                raise
            address, may_redirect = holder, False
            continue
        if isinstance(reply, Sending):
            return sock, reply, address
        if isinstance(reply, Redirect):
            address = (reply.ip, reply.port)
            continue
        if address == holder:
            return None
        address, may_redirect = holder, False  # the relay finished and let it go
    raise ConnectionError(f"object {object_id.hex()}: too many transfer redirects")


def _blocking_with_timeouts(sock: socket.socket) -> None:
    """Blocking mode (so MSG_WAITALL and sendfile wait in the kernel) with send and
    receive timeouts, so a peer that went silent still ends the transfer."""
    sock.settimeout(None)
    timeval = struct.pack("ll", int(_IO_TIMEOUT_S), 0)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, timeval)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, timeval)


class TransferServer:
    """Serves this node's objects to pulling raylets (one thread per connection)."""

    def __init__(self, manager: ObjectManager, host: str, port: int = 0):
        self.manager = manager
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self._stopped = False
        self._open: set[socket.socket] = set()  # connections being served
        self._open_lock = threading.Lock()
        threading.Thread(target=self._accept_loop, name="object-transfer", daemon=True).start()

    def _accept_loop(self):
        while not self._stopped:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _on_loop(self, fn, *args):
        """``fn(*args)`` on the raylet's loop, from a connection's thread."""
        done: concurrent.futures.Future = concurrent.futures.Future()

        def run():
            try:
                done.set_result(fn(*args))
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
                done.set_exception(exc)

        try:
            self.manager.loop.call_soon_threadsafe(run)
        except RuntimeError:  # the loop closed: the raylet is stopping
            raise ConnectionError("the raylet is stopping") from None
        return done.result(30)

    def _serve(self, raw: socket.socket):
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = auth.accept(raw)  # TLS (when on) and the cluster secret
        if conn is None:
            raw.close()
            logger.warning("object transfer: refused a connection (no TLS or no cluster secret)")
            return
        with self._open_lock:
            self._open.add(conn)
        with conn:
            try:
                peer_ip = conn.getpeername()[0]  # (``raw`` is detached under TLS)
                _blocking_with_timeouts(conn)
                while True:
                    try:
                        request = PullRequest.unpack(recv_exact(conn, PullRequest.SIZE))
                    except ConnectionError:
                        return
                    got = self._on_loop(self.manager.open_source, request, peer_ip)
                    if got is None or isinstance(got, Redirect):
                        conn.sendall(pack_reply(got or Missing()))
                        continue
                    try:
                        self._send(conn, got)
                    finally:
                        self._on_loop(self.manager.close_source, request.object_id, got)
            except (OSError, ConnectionError) as exc:
                logger.debug("transfer connection ended: %s", exc)
            finally:
                with self._open_lock:
                    self._open.discard(conn)

    def _send(self, conn: socket.socket, source: _Source) -> None:
        conn.sendall(pack_reply(Sending(source.size, source.metadata)))
        if isinstance(source, _FromFile):
            _send_range(conn, source.fd, source.offset, source.size)
        else:
            fd = self.manager.store.arena_fd
            if isinstance(source, _FromMemory):
                _send_range(conn, fd, source.offset, source.size)
            else:  # on as it arrives
                incoming, pos = source.incoming, 0
                while pos < incoming.size:
                    upto = incoming.wait_beyond(pos)
                    _send_range(conn, fd, incoming.arena_offset + pos, upto - pos)
                    pos = upto
        # Until the puller has everything, the kernel may still read our pages.
        if recv_exact(conn, len(ACK)) != ACK:
            raise ConnectionError("object transfer: the puller did not acknowledge")

    def stop(self):
        """Stop accepting, and end the transfers being served (their threads exit)."""
        self._stopped = True
        try:
            self.sock.close()
        except OSError:
            pass
        with self._open_lock:
            serving = list(self._open)
        for conn in serving:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:  # closed meanwhile
                pass


def _send_range(conn: socket.socket, fd: int, offset: int, length: int) -> None:
    """Send ``length`` bytes of file ``fd`` from ``offset``: kernel to kernel with
    ``sendfile``, or in chunks through the encryption under TLS."""
    end = offset + length
    tls_on = isinstance(conn, ssl.SSLSocket)
    while offset < end:
        if tls_on:
            chunk = os.pread(fd, min(end - offset, 1 << 22), offset)
            conn.sendall(chunk)
            sent = len(chunk)
        else:
            sent = os.sendfile(conn.fileno(), fd, offset, min(end - offset, 1 << 30))
        if sent == 0:
            raise ConnectionError("the object's file ended early")
        offset += sent


class _TransferTrace:
    """Records each received object as a ``transfer:receive`` event for
    ``ray.object_transfer_timeline()``."""

    def __init__(self, gcs, node_id: str, node_ip: str):
        self.gcs = gcs
        self.node_id = node_id
        self.node_ip = node_ip

    def record(self, object_id: bytes, size: int, holder: dict, sender: tuple,
               started: float) -> None:
        """``holder``: the node-table entry of the node asked; ``sender``: who sent the
        bytes (the holder, or a relay receiving the object too)."""
        buffer = profiling.EventBuffer(1)
        buffer.append(("transfer:receive", object_id.hex(), started, time.time(), os.getpid(), {
            "object_id": object_id.hex(), "size_bytes": size, "from_ip": holder["node_ip"],
            "from_node": holder.get("node_id", ""), "to_node": self.node_id,
            "via": f"{sender[0]}:{sender[1]}",
        }))
        try:
            profiling.flush(self.gcs, buffer, self.node_ip, f"raylet:{self.node_id}")
        except Exception:
            logger.debug("could not record a transfer event", exc_info=True)


def transfer_trace(gcs, node_id: str, node_ip: str, enabled: bool) -> _TransferTrace | None:
    """The timeline recorder for ``ObjectManager`` (None when profiling is off)."""
    return _TransferTrace(gcs, node_id, node_ip) if enabled else None
