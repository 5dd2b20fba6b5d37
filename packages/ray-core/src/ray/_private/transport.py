"""A dedicated I/O thread per process driving non-blocking sockets.

Drivers and workers run user code on their main thread; this thread reads every
connection, decodes messages and runs their handlers, so owners answer
borrowers and receive task results while user code is busy. Writes happen on
the calling thread when the socket can take them (the common case: no thread
hop on the hot path) and fall back to the I/O thread when the kernel buffer is
full. asyncio streams were measured ~4x slower than this for small frames.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import ssl
import threading
import time

from ray._private import auth, event_loop, tls
from ray._private.rpc import RpcPeer
from ray.exceptions import AuthenticationError

logger = logging.getLogger(__name__)

# A connected peer that is alive answers the challenge eventually; one busy for this
# long (or not a Ray process) is given up on like a dead one.
_CLIENT_AUTH_TIMEOUT_S = 60.0


class Connection:
    """A socket plus its RpcPeer; thread-safe writes, reads on the loop thread.

    Layers, bottom up: the socket; TLS on TCP when it is on (``tls.TlsSession``); the
    mutual secret handshake (``auth``); the peer's messages. What the peer writes before
    the handshakes are done waits in ``_held``, in order."""

    def __init__(self, loop: EventLoop, sock: socket.socket, peer_factory, server: bool = False,
                 client_auth: str | None = None):
        self.loop = loop
        self.sock = sock
        sock.setblocking(False)
        self._lock = threading.Lock()
        self._out: list[bytes] = []
        self._closed = False
        # Accepted connections read nothing but the client's answer until it checks out.
        self._gate = auth.ServerGate() if server else None
        # Outgoing ones (client_auth names the server) answer the server's challenge and
        # check its proof on the loop thread. The caller never blocks on a peer that is
        # slow to answer (e.g. a worker busy importing a big library with the GIL held).
        self._client = auth.ClientHandshake(client_auth) if client_auth is not None else None
        handshakes = server or client_auth is not None
        if not handshakes and isinstance(sock, ssl.SSLSocket):
            raise TypeError("the event loop drives TLS itself: connect with "
                            "connect_socket(handshake=False) and pass client_auth=")
        # Neither: a socket connect_socket authenticated already (a local Unix one).
        self._ready = not handshakes  # handshakes done: the peer's writes go out
        self._held: list[bytes] = []
        self._tls = (tls.TlsSession(server, client_auth or "the client")
                     if handshakes and tls.applies_to(sock) else None)
        self.peer: RpcPeer = peer_factory(self._write)
        with self._lock:
            if self._tls is not None:
                self._raw_send(self._tls.start())
            elif self._gate is not None:
                self._raw_send(self._gate.greeting)
            if self._out:
                loop.call_soon(loop._want_write, self)
        if self._client is not None or self._tls is not None:
            loop.call_later(_CLIENT_AUTH_TIMEOUT_S, self._auth_overdue)

    def _write(self, data: bytes) -> None:
        with self._lock:
            if self._closed:
                from ray.exceptions import RayConnectionError

                raise RayConnectionError(f"connection {self.peer.name} is closed")
            if not self._ready:
                self._held.append(data)
                return
            if self._tls is not None:
                data = self._tls.encrypt(data)
            backlog = bool(self._out)  # the loop already waits to write it
            self._raw_send(data)
            if backlog or not self._out:
                return
        self.loop.call_soon(self.loop._want_write, self)

    def _raw_send(self, data: bytes) -> None:
        """Send bytes as they are, under the lock; what does not fit waits in ``_out``
        (the caller asks the loop to wait for writability when ``_out`` is not empty)."""
        if not data:
            return
        if not self._out:
            try:
                sent = self.sock.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError as exc:
                self.loop.call_soon(self.close, f"send failed: {exc}")
                return
            data = data[sent:]
            if not data:
                return
        self._out.append(data)

    def _flush(self) -> bool:
        """Called on the loop thread when writable; True once everything is out."""
        with self._lock:
            while self._out:
                data = self._out[0]
                try:
                    sent = self.sock.send(data)
                except (BlockingIOError, InterruptedError):
                    return False
                except OSError as exc:
                    self.loop.call_soon(self.close, f"send failed: {exc}")
                    return True
                if sent < len(data):
                    self._out[0] = data[sent:]
                    return False
                self._out.pop(0)
            return True

    def _on_readable(self) -> None:
        # Reads happen only on the loop thread, into the loop's one buffer: recv(1 MiB)
        # would allocate a fresh megabyte per message (~30 us of mmap/munmap each).
        try:
            n = self.sock.recv_into(self.loop._rbuf)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self.close(f"recv failed: {exc}")
            return
        if not n:
            self.close("peer closed the connection")
            return
        self.read_full = n == len(self.loop._rbuf)  # edge-triggered: the loop reads again
        data = self.loop._rview[:n]
        if self._tls is not None:
            data = self._tls_receive(bytes(data))
            if not data:
                return
        if not self._ready:
            data = self._handshake_step(bytes(data))
            if not data:
                return
        try:
            self.peer.feed(data)
        except Exception as exc:  # noqa: BLE001 - a malformed stream: logged, connection closed
            logger.warning("%s: bad data, closing: %s", self.peer.name, exc)
            self.close(f"protocol error: {exc}")

    def _tls_receive(self, raw: bytes) -> bytes | None:
        """Decrypt; send what the TLS session answers; start the secret handshake (the
        server's greeting) once TLS is up."""
        session = self._tls
        with self._lock:
            was_up = session.established
            try:
                plain = session.receive(raw)
            except (AuthenticationError, ConnectionError) as exc:
                failed = exc
                with contextlib.suppress(OSError):  # the TLS alert tells the peer why
                    self.sock.send(session.outgoing())
            else:
                failed = None
                self._raw_send(session.outgoing())
                if not was_up and session.established and self._gate is not None:
                    self._raw_send(session.encrypt(self._gate.greeting))
                waiting = bool(self._out)
        if failed is not None:
            if self._gate is not None:
                logger.warning("%s: refused a connection: %s", self.peer.name, failed)
            self.close(f"TLS failed: {failed}")
            return None
        if waiting:
            self.loop._want_write(self)
        return plain

    def _handshake_step(self, data: bytes) -> bytes | None:
        """Advance the secret handshake; the bytes for the peer once it is done."""
        if self._gate is not None:
            try:
                rest = self._gate.feed(data)
            except AuthenticationError as exc:
                logger.warning("%s: refused a connection: %s", self.peer.name, exc)
                self.close("authentication failed")
                return None
            if rest is None:
                return None
            self._become_ready(self._gate.welcome)
            self._gate = None
            return rest
        try:
            reply, rest = self._client.feed(data)
        except AuthenticationError as exc:
            self.close(f"authentication failed: {exc}")
            return None
        if reply is not None:
            self._send_handshake(reply)
        if rest is None:
            return None
        self._client = None
        self._become_ready(b"")
        return rest

    def _send_handshake(self, data: bytes) -> None:
        with self._lock:
            if self._tls is not None:
                data = self._tls.encrypt(data)
            self._raw_send(data)
            waiting = bool(self._out)
        if waiting:
            self.loop._want_write(self)

    def _become_ready(self, first: bytes) -> None:
        """Handshakes done: ``first`` (the server's welcome), then the held writes, in
        order, go out before any later write."""
        with self._lock:
            held, self._held = self._held, []
            data = first + b"".join(held) if held else first
            if data:
                if self._tls is not None:
                    data = self._tls.encrypt(data)
                self._raw_send(data)
            self._ready = True
            waiting = bool(self._out)
        if waiting:
            self.loop._want_write(self)

    def _auth_overdue(self) -> None:
        if not self._ready and not self._closed:
            self.close(f"the {'client' if self._gate is not None else 'server'} did not "
                       f"complete authentication in {_CLIENT_AUTH_TIMEOUT_S:.0f} s")

    def close(self, reason: str = "closed") -> None:
        if self._client is not None and reason == "peer closed the connection":
            reason = str(self._client.refused())
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.loop._unregister(self)
        try:
            self.sock.close()
        except OSError:
            pass
        self.peer.connection_lost(reason)

    @property
    def closed(self) -> bool:
        return self._closed


class EventLoop(event_loop.EventLoop):
    """The process's I/O loop (``event_loop.EventLoop``) driving ``Connection``s."""

    def add_connection(self, sock: socket.socket, peer_factory, server: bool = False,
                       client_auth: str | None = None) -> Connection:
        """Drive ``sock``; ``server=True`` for accepted sockets (the client must authenticate),
        ``client_auth=<server name>`` for sockets from ``connect_socket(handshake=False)``."""
        conn = Connection(self, sock, peer_factory, server, client_auth)
        self.call_soon(self._register, conn)
        return conn


def connect_socket(address, timeout_s: float = 10.0, retry: bool = True,
                   handshake: bool = True) -> socket.socket:
    """Connect to a Ray endpoint at a Unix path (str) or a (host, port) pair and authenticate.

    Retries the connect until ``timeout_s``; a refused handshake raises AuthenticationError.
    ``retry=False`` for endpoints that listened before their address was published
    (workers, remote raylets): refused then means gone, and callers on the I/O thread
    must not stall retrying a dead process.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        if isinstance(address, str):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        else:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            address = tuple(address)
        try:
            sock.settimeout(max(0.1, deadline - time.monotonic()))
            sock.connect(address)
        except OSError:
            sock.close()
            if not retry or time.monotonic() >= deadline:
                raise
            time.sleep(0.02)
            continue
        if not handshake:  # the caller's event loop authenticates (add_connection(client_auth))
            sock.settimeout(None)
            return sock
        try:  # TLS on TCP when it is on, then the mutual secret handshake
            secured = auth.connect(sock, address if isinstance(address, str)
                                   else f"{address[0]}:{address[1]}",
                                   timeout_s=max(1.0, deadline - time.monotonic()))
        except BaseException:
            sock.close()
            raise
        secured.settimeout(None)
        return secured
