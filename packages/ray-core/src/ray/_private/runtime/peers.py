"""The connections of one driver or worker: its listening sockets, its raylet, and the
workers and remote raylets it talks to (at most one connection each).

Parts register the messages they answer with ``handle``; every connection
dispatches through that one table on the I/O thread. A lost connection runs the
callbacks registered for it (``connect_worker(..., on_lost=...)``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from ray._private import tls
from ray._private.messages import OwnerAddress, RayletAddress
from ray._private.rpc import RpcPeer
from ray._private.transport import EventLoop, connect_socket
from ray.exceptions import RayConnectionError

logger = logging.getLogger(__name__)

# After a failed connect to a raylet, requests naming it fail fast for this long
# (the head marks a silent node dead within heartbeat_timeout_s).
_UNREACHABLE_FOR_S = 10.0

PeerCallback = Callable[[RpcPeer], None]


class PeerPool:
    def __init__(self, loop: EventLoop, *, node_id_hex: str, node_ip: str, worker_id: bytes,
                 socket_dir: str):
        self._loop = loop
        self._node_id_hex = node_id_hex
        self._node_ip = node_ip
        self.handlers: dict[str, Callable[..., Any]] = {}
        self._workers: dict[bytes, RpcPeer] = {}
        self._raylets: dict[str, RpcPeer] = {}
        self._unreachable: dict[str, float] = {}  # node id -> when a connect failed
        self._lost_callbacks: dict[RpcPeer, list[PeerCallback]] = {}
        self._lock = threading.RLock()  # on_lost runs under it from connect_worker
        tls.check()  # a misconfigured RAY_USE_TLS fails here, naming the variable
        self.unix_path = os.path.join(socket_dir, f"worker-{worker_id.hex()[:16]}")
        self.address = self._listen(worker_id)
        self.raylet: RpcPeer | None = None

    def handle(self, method: str, fn: Callable[..., Any]) -> None:
        """Answer ``method`` from any peer with ``fn(peer, *args)`` (on the I/O thread)."""
        self.handlers[method] = fn

    # -- listening ------------------------------------------------------------------
    def _listen(self, worker_id: bytes) -> OwnerAddress:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.unix_path)
        unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        unix.bind(self.unix_path)
        unix.listen(128)
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.bind((self._node_ip, 0))
        tcp.listen(128)
        self._loop.listen(unix, self._accept)
        self._loop.listen(tcp, self._accept)
        return OwnerAddress(self._node_ip, tcp.getsockname()[1], self.unix_path, worker_id)

    def _accept(self, sock: socket.socket) -> None:
        if sock.family == socket.AF_INET:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._loop.add_connection(sock, lambda write: self._new_peer(write, "incoming"),
                                  server=True)

    def _new_peer(self, write, name: str) -> RpcPeer:
        return RpcPeer(write, self.handlers, name=name, on_close=self._peer_closed)

    def on_lost(self, peer: RpcPeer, callback: PeerCallback) -> None:
        """Call ``callback(peer)`` when the connection closes (once per callback)."""
        with self._lock:
            callbacks = self._lost_callbacks.setdefault(peer, [])
            if callback not in callbacks:
                callbacks.append(callback)

    def _peer_closed(self, peer: RpcPeer) -> None:
        with self._lock:
            callbacks = self._lost_callbacks.pop(peer, ())
        for cb in callbacks:
            try:
                cb(peer)
            except Exception:
                logger.exception("a close callback of connection %s failed", peer.name)
        with self._lock:
            for wkey in [k for k, p in self._workers.items() if p is peer]:
                del self._workers[wkey]
            for rkey in [k for k, p in self._raylets.items() if p is peer]:
                del self._raylets[rkey]

    # -- the local raylet ------------------------------------------------------------
    def connect_raylet(self, path: str, timeout_s: float, on_lost: PeerCallback) -> RpcPeer:
        try:
            sock = connect_socket(path, timeout_s=timeout_s)
        except OSError as exc:
            raise RayConnectionError(f"Cannot connect to the raylet at {path}: {exc}") from None
        conn = self._loop.add_connection(sock, lambda write: self._new_peer(write, "raylet"))
        self.on_lost(conn.peer, on_lost)
        self.raylet = conn.peer
        return conn.peer

    def local_raylet(self) -> RpcPeer:
        assert self.raylet is not None, "connect_raylet first"
        return self.raylet

    # -- other processes ---------------------------------------------------------------
    def connect_worker(self, address: OwnerAddress, on_lost: PeerCallback | None = None
                       ) -> RpcPeer:
        """The connection to the driver or worker at ``address`` (made once, then shared)."""
        with self._lock:
            peer = self._workers.get(address.worker_id)
            if peer is not None and not peer.closed:
                if on_lost is not None:
                    self.on_lost(peer, on_lost)
                return peer
        if address.ip == self._node_ip and os.path.exists(address.unix_path):
            target: str | tuple = address.unix_path
        else:
            target = (address.ip, address.port)
        sock = connect_socket(target, timeout_s=5.0, retry=False, handshake=False)
        conn = self._loop.add_connection(sock, lambda write: self._new_peer(write, "worker"),
                                         client_auth=f"worker {address.host_port()}")
        if on_lost is not None:
            self.on_lost(conn.peer, on_lost)
        with self._lock:
            existing = self._workers.get(address.worker_id)
            if existing is not None and not existing.closed:
                conn.close("duplicate")
                if on_lost is not None:
                    self.on_lost(existing, on_lost)
                return existing
            self._workers[address.worker_id] = conn.peer
        return conn.peer

    def raylet_for(self, target: RayletAddress) -> RpcPeer:
        """The connection to the raylet at ``target`` (ours: the local socket)."""
        if target.node_id == self._node_id_hex:
            return self.local_raylet()
        with self._lock:
            peer = self._raylets.get(target.node_id)
            if peer is not None and not peer.closed:
                return peer
            failed_at = self._unreachable.get(target.node_id)
        # This runs on the I/O thread (lease replies): a node that just died must not
        # stall it for a full connect timeout on every request that names it.
        if failed_at is not None and time.monotonic() - failed_at < _UNREACHABLE_FOR_S:
            raise ConnectionRefusedError(f"raylet {target.node_id[:8]} was unreachable just now")
        try:
            sock = connect_socket((target.ip, target.port), timeout_s=2.0, retry=False,
                                  handshake=False)
        except OSError:
            with self._lock:
                self._unreachable[target.node_id] = time.monotonic()
            raise
        conn = self._loop.add_connection(sock,
                                         lambda write: self._new_peer(write, "raylet-remote"),
                                         client_auth=f"raylet of node {target.node_id[:8]}")
        with self._lock:
            self._raylets[target.node_id] = conn.peer
        return conn.peer

    def close(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.unix_path)


__all__ = ["PeerPool"]
