"""A dedicated I/O thread per process driving non-blocking sockets.

Drivers and workers run user code on their main thread; this thread reads every
connection, decodes messages and runs their handlers, so owners answer
borrowers and receive task results while user code is busy. Writes happen on
the calling thread when the socket can take them (the common case: no thread
hop on the hot path) and fall back to the I/O thread when the kernel buffer is
full. asyncio streams were measured ~4x slower than this for small frames.
"""

from __future__ import annotations

import errno
import heapq
import itertools
import logging
import os
import selectors
import socket
import threading
import time
from collections.abc import Callable

from ray._private import auth
from ray._private.rpc import RpcPeer
from ray.exceptions import AuthenticationError

logger = logging.getLogger(__name__)

_RECV_BYTES = 1 << 20
# A connected peer that is alive answers the challenge eventually; one busy for this
# long (or not a Ray process) is given up on like a dead one.
_CLIENT_AUTH_TIMEOUT_S = 60.0


class Connection:
    """A socket plus its RpcPeer; thread-safe writes, reads on the loop thread."""

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
        # Outgoing ones (client_auth names the server) answer the server's challenge on the
        # loop thread; what the caller writes meanwhile waits in _held, in order. The
        # caller never blocks on a peer that is slow to answer (e.g. a worker busy
        # importing a big library with the GIL held).
        self._client = auth.ClientHandshake(client_auth) if client_auth is not None else None
        self._held: list[bytes] = []
        self.peer: RpcPeer = peer_factory(self._write)
        if self._gate is not None:
            self._write(self._gate.greeting)
        if self._client is not None:
            loop.call_later(_CLIENT_AUTH_TIMEOUT_S, self._auth_overdue)

    def _write(self, data: bytes) -> None:
        with self._lock:
            if self._closed:
                from ray.exceptions import RayConnectionError

                raise RayConnectionError(f"connection {self.peer.name} is closed")
            if self._client is not None:
                self._held.append(data)
                return
            if self._out:
                self._out.append(data)
                return
            try:
                sent = self.sock.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError as exc:
                self.loop.call_soon(self.close, f"send failed: {exc}")
                return
            if sent == len(data):
                return
            self._out.append(data[sent:])
        self.loop.call_soon(self.loop._want_write, self)

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
        data = self.loop._rview[:n]
        if self._client is not None:
            data = self._client_auth_step(bytes(data))
            if not data:
                return
        if self._gate is not None:
            try:
                data = self._gate.feed(bytes(data))
            except AuthenticationError:
                logger.warning("%s: refused a connection without the cluster secret",
                               self.peer.name)
                self.close("authentication failed")
                return
            if data is None:
                return
            self._gate = None
            self._write(auth.OK)
            if not data:
                return
        try:
            self.peer.feed(data)
        except Exception as exc:
            logger.warning("%s: bad data, closing: %s", self.peer.name, exc)
            self.close(f"protocol error: {exc}")

    def _client_auth_step(self, data: bytes) -> bytes | None:
        """Advance the client handshake; the bytes for the peer once it is done."""
        try:
            reply, rest = self._client.feed(data)
            if reply is not None and self.sock.send(reply) != len(reply):
                raise OSError("could not send the authentication answer")
        except (OSError, AuthenticationError) as exc:
            self.close(f"authentication failed: {exc}")
            return None
        if rest is None:
            return None
        with self._lock:  # held writes go out first, in order, before any later write
            self._client = None
            held, self._held = self._held, []
            self._out.extend(held)
        if held and not self._flush():
            self.loop._want_write(self)
        return rest

    def _auth_overdue(self) -> None:
        if self._client is not None and not self._closed:
            self.close(f"the server did not complete authentication in "
                       f"{_CLIENT_AUTH_TIMEOUT_S:.0f} s")

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


class EventLoop:
    """select/epoll loop on its own daemon thread, with timers and thread-safe call_soon.

    ``spin_s``: after handling socket events the loop polls (``select(0)``, yielding
    the CPU between polls) for up to this long before it sleeps in ``select``. A
    request/reply exchange then usually finds its reply while the loop is still
    awake: on a VM, waking a sleeping thread whose vCPU went idle costs tens of
    microseconds, several times per ``ray.get`` round trip. An idle loop (only timers
    firing) never spins."""

    def __init__(self, name: str = "ray-io", spin_s: float = 0.0):
        self._spin_s = spin_s
        self._sel = selectors.DefaultSelector()
        self._rbuf = bytearray(_RECV_BYTES)
        self._rview = memoryview(self._rbuf)
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._sel.register(self._wake_r, selectors.EVENT_READ, None)
        self._calls: list[Callable] = []
        self._calls_lock = threading.Lock()
        self._timers: list = []
        self._timer_seq = itertools.count()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._listeners: dict[int, tuple[socket.socket, Callable]] = {}

    def start(self) -> None:
        self._thread.start()

    def in_loop_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def call_soon(self, fn: Callable, *args) -> None:
        with self._calls_lock:
            self._calls.append((fn, args))
        if not self.in_loop_thread():
            try:
                os.write(self._wake_w, b"\0")
            except BlockingIOError:
                pass

    def call_later(self, delay_s: float, fn: Callable, *args) -> list:
        """Run ``fn`` on the loop thread after ``delay_s``; returns a handle for cancel()."""
        handle = [time.monotonic() + delay_s, next(self._timer_seq), fn, args, False]
        self.call_soon(heapq.heappush, self._timers, handle)
        return handle

    @staticmethod
    def cancel(handle: list) -> None:
        handle[4] = True

    # -- sockets -----------------------------------------------------------
    def add_connection(self, sock: socket.socket, peer_factory, server: bool = False,
                       client_auth: str | None = None) -> Connection:
        """Drive ``sock``; ``server=True`` for accepted sockets (the client must authenticate),
        ``client_auth=<server name>`` for sockets from ``connect_socket(handshake=False)``."""
        conn = Connection(self, sock, peer_factory, server, client_auth)
        self.call_soon(self._register, conn)
        return conn

    def _register(self, conn: Connection) -> None:
        if conn.closed:
            return
        self._sel.register(conn.sock, selectors.EVENT_READ, conn)

    def _want_write(self, conn: Connection) -> None:
        if conn.closed:
            return
        try:
            self._sel.modify(conn.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, conn)
        except (KeyError, ValueError):
            pass

    def _unregister(self, conn: Connection) -> None:
        def drop():
            try:
                self._sel.unregister(conn.sock)
            except (KeyError, ValueError, OSError):
                pass

        if self.in_loop_thread():
            drop()
        else:
            self.call_soon(drop)

    def listen(self, sock: socket.socket, on_accept: Callable[[socket.socket], None]) -> None:
        sock.setblocking(False)
        self.call_soon(self._sel.register, sock, selectors.EVENT_READ, ("listen", on_accept))
        self._listeners[sock.fileno()] = (sock, on_accept)

    # -- the loop ------------------------------------------------------------
    def _run(self) -> None:
        sel = self._sel
        events = None
        while not self._stopping:
            timeout = None
            if self._timers:
                timeout = max(0.0, self._timers[0][0] - time.monotonic())
            if self._calls:
                timeout = 0
            try:
                if events and self._spin_s and timeout != 0:
                    events = self._spin_select(timeout)
                else:
                    events = sel.select(timeout)
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                raise
            for key, mask in events:
                data = key.data
                if data is None:
                    try:
                        while os.read(self._wake_r, 4096):
                            pass
                    except BlockingIOError:
                        pass
                elif type(data) is tuple:
                    self._accept(key.fileobj, data[1])
                else:
                    if mask & selectors.EVENT_WRITE and data._flush() and not data.closed:
                        try:
                            sel.modify(data.sock, selectors.EVENT_READ, data)
                        except (KeyError, ValueError):
                            pass
                    if mask & selectors.EVENT_READ:
                        data._on_readable()
            self._run_calls()
            self._run_timers()
        self._sel.close()

    def _spin_select(self, timeout: float | None) -> list:
        sel, clock = self._sel, time.perf_counter
        start = now = clock()
        deadline = start + self._spin_s
        while now < deadline:
            events = sel.select(0)
            if events or self._calls:
                return events
            os.sched_yield()
            now = clock()
        return sel.select(None if timeout is None else max(0.0, timeout - (now - start)))

    def _accept(self, listener: socket.socket, on_accept) -> None:
        while True:
            try:
                sock, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            try:
                on_accept(sock)
            except Exception:
                logger.exception("accept handler failed")
                sock.close()

    def _run_calls(self) -> None:
        if not self._calls:
            return
        with self._calls_lock:
            calls, self._calls = self._calls, []
        for fn, args in calls:
            try:
                fn(*args)
            except Exception:
                logger.exception("callback %r failed", fn)

    def _run_timers(self) -> None:
        now = time.monotonic()
        timers = self._timers
        while timers and timers[0][0] <= now:
            _, _, fn, args, cancelled = heapq.heappop(timers)
            if cancelled:
                continue
            try:
                fn(*args)
            except Exception:
                logger.exception("timer %r failed", fn)

    def stop(self) -> None:
        self._stopping = True
        try:
            os.write(self._wake_w, b"\0")
        except OSError:
            pass
        if not self.in_loop_thread():
            self._thread.join(timeout=5)
        for sock, _ in self._listeners.values():
            try:
                sock.close()
            except OSError:
                pass
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass


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
        try:
            auth.client_handshake(sock, address if isinstance(address, str)
                                  else f"{address[0]}:{address[1]}",
                                  timeout_s=max(1.0, deadline - time.monotonic()))
        except BaseException:
            sock.close()
            raise
        sock.settimeout(None)
        return sock
