"""Node-to-node object transfer: pull an object from another raylet into the local store.

Each raylet runs a small transfer server (its ``object_manager_port``): a
connection asks for one object id and gets back a header and the raw bytes,
sent straight from the arena with ``sendall(memoryview)``; the puller
``recv_into``\\ s them straight into a freshly created object in its own arena.
No intermediate copies or message framing; socket I/O happens on helper
threads, every store operation on the raylet's event loop. Concurrent pulls of
one object share a single transfer. An object this node has spilled to disk is
served from its file with ``sendfile`` (not read back into the store first); the
puller waits for room in its own store (spilling there if needed).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import ssl
import struct
import threading
import time

from plasma.errors import ObjectStoreFullError
from ray._private import auth, profiling
from ray._private.gcs import keys

logger = logging.getLogger(__name__)

_HEADER = struct.Struct("<QI")  # data size, metadata size
# How long a bundle waits for room held by objects other readers have pinned (they
# release them when they finish) before its reader gets the store-full error.
_BUNDLE_ROOM_WAIT_S = 60.0
_MISSING = 2**64 - 1


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < n:
        got = sock.recv(n - len(chunks))
        if not got:
            raise ConnectionError("transfer connection closed early")
        chunks += got
    return bytes(chunks)


class TransferServer:
    """Serves this node's objects to pulling raylets (one thread per connection)."""

    def __init__(self, node, host: str, port: int = 0):
        self.node = node
        self.loop = asyncio.get_running_loop()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self._stopped = False
        threading.Thread(target=self._accept_loop, name="object-transfer", daemon=True).start()

    def _accept_loop(self):
        while not self._stopped:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _on_loop(self, fn, *args):
        return asyncio.run_coroutine_threadsafe(_call(fn, *args), self.loop).result(30)

    def _serve(self, raw: socket.socket):
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = auth.accept(raw)  # TLS (when on) and the cluster secret
        if conn is None:
            raw.close()
            logger.warning("object transfer: refused a connection (no TLS or no cluster secret)")
            return
        with conn:
            try:
                while True:
                    try:
                        object_id = _recv_exact(conn, 20)
                    except ConnectionError:
                        return
                    got = self._on_loop(self._open_object, object_id)
                    if got is None:
                        conn.sendall(_HEADER.pack(_MISSING, 0))
                    elif isinstance(got[0], int):
                        _send_from_file(conn, *got)
                    else:
                        data, metadata = got
                        try:
                            conn.sendall(_HEADER.pack(len(data), len(metadata)) + metadata)
                            conn.sendall(data)
                        finally:
                            del data
                            self._on_loop(self.node.store.release_local, object_id)
            except (OSError, ConnectionError) as exc:
                logger.debug("transfer connection ended: %s", exc)

    def _open_object(self, object_id: bytes):
        """(view, metadata) pinned in memory, (fd, SpilledCopy) on disk, or None."""
        got = self.node.store.get_local(object_id)
        if got is not None:
            return got
        return self.node.local_objects.open_spilled(object_id)

    def stop(self):
        self._stopped = True
        try:
            self.sock.close()
        except OSError:
            pass


async def _call(fn, *args):
    return fn(*args)


def _send_from_file(conn: socket.socket, fd: int, copy) -> None:
    """Send a spilled object from its file: kernel to kernel, no copy through Python
    (under TLS the bytes must pass through the encryption: read and send in chunks)."""
    try:
        metadata = copy.metadata
        conn.sendall(_HEADER.pack(copy.data_size, len(metadata)) + metadata)
        offset, end = copy.data_offset, copy.data_offset + copy.data_size
        while offset < end:
            if isinstance(conn, ssl.SSLSocket):
                chunk = os.pread(fd, min(end - offset, 1 << 22), offset)
                conn.sendall(chunk)
                sent = len(chunk)
            else:
                sent = os.sendfile(conn.fileno(), fd, offset, min(end - offset, 1 << 30))
            if sent == 0:
                raise ConnectionError(f"spill file {copy.path} ended early")
            offset += sent
    finally:
        os.close(fd)


def _open(address, object_id: bytes):
    raw = socket.create_connection(address, timeout=30)
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:  # TLS (when on), then the mutual secret handshake
        sock = auth.connect(raw, f"object transfer server {address[0]}:{address[1]}")
    except BaseException:
        raw.close()
        raise
    sock.sendall(object_id)
    size, meta_len = _HEADER.unpack(_recv_exact(sock, _HEADER.size))
    if size == _MISSING:
        sock.close()
        return None
    metadata = _recv_exact(sock, meta_len) if meta_len else b""
    return sock, size, metadata


def _receive(sock: socket.socket, buf: memoryview, size: int) -> None:
    try:
        view = buf.cast("B")
        pos = 0
        while pos < size:
            n = sock.recv_into(view[pos:], min(size - pos, 1 << 24))
            if n == 0:
                raise ConnectionError("transfer connection closed early")
            pos += n
    finally:
        sock.close()


async def _transfer(node, object_id: bytes, node_id: bytes) -> None:
    if node.store.contains_local(object_id):
        return
    info = node.gcs.hget_obj(keys.NODES, node_id.hex())
    if not info or not info.get("alive", True):
        raise ConnectionError(f"node {node_id.hex()[:8]} is not alive")
    address = (info["node_ip"], info["object_transfer_port"])
    loop = asyncio.get_running_loop()
    started = time.time()
    opened = await loop.run_in_executor(None, _open, address, object_id)
    if opened is None:
        raise KeyError(f"object {object_id.hex()} is not on node {node_id.hex()[:8]}")
    sock, size, metadata = opened
    secondary = node.local_objects.secondary
    secondary.add(object_id)
    try:
        buf = await node.store.create_local_when_room(object_id, size, metadata)
    except BaseException:
        sock.close()
        secondary.discard(object_id)
        raise
    try:
        await loop.run_in_executor(None, _receive, sock, buf, size)
    except BaseException:
        buf.release()
        node.store.abort_local(object_id)
        secondary.discard(object_id)
        raise
    buf.release()
    node.store.seal_local(object_id)
    node.local_objects.pulled(object_id)  # keeps the creator's pin for the requester
    _record_transfer(node, object_id, size, info, started)


def _record_transfer(node, object_id: bytes, size: int, source: dict, started: float) -> None:
    """One ``transfer:receive`` event for ``ray.object_transfer_timeline()``."""
    if not node.config.profiling_enabled:
        return
    buffer = profiling.EventBuffer(1)
    buffer.append(("transfer:receive", object_id.hex(), started, time.time(), os.getpid(), {
        "object_id": object_id.hex(), "size_bytes": size, "from_ip": source["node_ip"],
        "from_node": source.get("node_id", ""), "to_node": node.node_id,
    }))
    try:
        profiling.flush(node.gcs, buffer, node.node_ip, f"raylet:{node.node_id}")
    except Exception:
        logger.debug("could not record a transfer event", exc_info=True)


def _shared_transfer(node, object_id: bytes, node_id: bytes) -> asyncio.Future:
    """The transfer of ``object_id`` here (concurrent pulls of one object share it)."""
    inflight = node.__dict__.setdefault("_om_inflight", {})
    task = inflight.get(object_id)
    if task is None:
        task = asyncio.ensure_future(_transfer(node, object_id, node_id))
        inflight[object_id] = task
        task.add_done_callback(lambda _t: inflight.pop(object_id, None))
    return task


async def pull(node, object_id: bytes, node_id: bytes, deferred) -> None:
    try:
        await asyncio.shield(_shared_transfer(node, object_id, node_id))
        deferred.resolve(True)
    except Exception as exc:  # noqa: BLE001 - logged and handed to the requester
        logger.warning("pull of %s from %s failed: %s", object_id.hex(), node_id.hex()[:8], exc)
        deferred.reject(exc)


async def pull_bundle(node, pairs: list, deferred) -> None:
    """Pull what one reader needs at once (a task's arguments, one ``ray.get``) as a unit,
    one bundle at a time on this node: two readers that each got part of theirs would
    otherwise fill the store with what they hold and wait on each other (Ray's pull
    manager admits whole bundles for the same reason). ``pairs``: [object id, node id]."""
    lock = node.__dict__.get("_om_bundle_lock")
    if lock is None:
        lock = node.__dict__["_om_bundle_lock"] = asyncio.Lock()
    loop = asyncio.get_running_loop()
    try:
        async with lock:
            deadline = loop.time() + _BUNDLE_ROOM_WAIT_S
            while True:
                try:
                    await asyncio.gather(*(asyncio.shield(_shared_transfer(node, oid, nid))
                                           for oid, nid in pairs))
                    break
                except ObjectStoreFullError:
                    # The rest of the store is pinned by readers that hold their whole
                    # sets (a bundle that got in first): wait for them to finish, as
                    # Ray's pull manager waits for room (what arrived stays).
                    if loop.time() > deadline:
                        raise
                    await asyncio.sleep(0.05)
        deferred.resolve(True)
    except Exception as exc:  # noqa: BLE001 - logged and handed to the requester
        logger.warning("pull of %d objects failed: %s", len(pairs), exc)
        deferred.reject(exc)
