"""Node-to-node object transfer: pull an object from another raylet into the local store.

Each raylet runs a small transfer server (its ``object_manager_port``): a
connection asks for one object id and gets back a header and the raw bytes,
sent straight from the arena with ``sendall(memoryview)``; the puller
``recv_into``\\ s them straight into a freshly created object in its own arena.
No intermediate copies or message framing; socket I/O happens on helper
threads, every store operation on the raylet's event loop. Concurrent pulls of
one object share a single transfer.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import struct
import threading
import time

from ray._private import auth, profiling
from ray._private.gcs import keys

logger = logging.getLogger(__name__)

_HEADER = struct.Struct("<QI")  # data size, metadata size
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

    def _serve(self, conn: socket.socket):
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conn:
            if not auth.server_handshake(conn):
                logger.warning("object transfer: refused a connection without the cluster secret")
                return
            try:
                while True:
                    try:
                        object_id = _recv_exact(conn, 20)
                    except ConnectionError:
                        return
                    got = self._on_loop(self.node.store.get_local, object_id)
                    if got is None:
                        conn.sendall(_HEADER.pack(_MISSING, 0))
                        continue
                    data, metadata = got
                    try:
                        conn.sendall(_HEADER.pack(len(data), len(metadata)) + metadata)
                        conn.sendall(data)
                    finally:
                        del data
                        self._on_loop(self.node.store.release_local, object_id)
            except (OSError, ConnectionError) as exc:
                logger.debug("transfer connection ended: %s", exc)

    def stop(self):
        self._stopped = True
        try:
            self.sock.close()
        except OSError:
            pass


async def _call(fn, *args):
    return fn(*args)


def _open(address, object_id: bytes):
    sock = socket.create_connection(address, timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        auth.client_handshake(sock, f"object transfer server {address[0]}:{address[1]}")
    except BaseException:
        sock.close()
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
    node._secondary.add(object_id)
    try:
        buf = node.store.create_local(object_id, size, metadata)
    except BaseException:
        sock.close()
        node._secondary.discard(object_id)
        raise
    try:
        await loop.run_in_executor(None, _receive, sock, buf, size)
    except BaseException:
        buf.release()
        node.store.abort_local(object_id)
        node._secondary.discard(object_id)
        raise
    buf.release()
    node.store.seal_local(object_id)
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


async def pull(node, object_id: bytes, node_id: bytes, deferred) -> None:
    inflight = node.__dict__.setdefault("_om_inflight", {})
    task = inflight.get(object_id)
    if task is None:
        task = asyncio.ensure_future(_transfer(node, object_id, node_id))
        inflight[object_id] = task
        task.add_done_callback(lambda _t: inflight.pop(object_id, None))
    try:
        await asyncio.shield(task)
        deferred.resolve(True)
    except Exception as exc:
        logger.warning("pull of %s from %s failed: %s", object_id.hex(), node_id.hex()[:8], exc)
        deferred.reject(exc)
