"""asyncio glue for RpcPeer: the raylet serves the same protocol as the threaded loop."""

from __future__ import annotations

import asyncio
import logging
import socket

from ray._private import auth, tls
from ray._private.rpc import RpcPeer
from ray.exceptions import AuthenticationError

logger = logging.getLogger(__name__)


class RpcProtocol(asyncio.Protocol):
    """One connection: TLS when ``tls_side`` says so, then the mutual secret handshake
    (``server=True`` for accepted connections; ``client_auth=<server name>`` for ours),
    then the peer's messages. ``ready`` resolves once the handshakes are done."""

    def __init__(self, handlers, name, on_close=None, server: bool = False,
                 client_auth: str | None = None, use_tls: bool = False):
        self._handlers = handlers
        self._name = name
        self._on_close = on_close
        self._gate = auth.ServerGate() if server else None
        self._client = auth.ClientHandshake(client_auth) if client_auth is not None else None
        self._tls = tls.TlsSession(server, client_auth or "the client") if use_tls else None
        self._is_client = client_auth is not None
        self._held: list[bytes] = []
        self.ready: asyncio.Future = asyncio.get_running_loop().create_future()
        self.peer: RpcPeer | None = None
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport
        self.peer = RpcPeer(self._write, self._handlers, name=self._name,
                            on_close=self._on_close)
        self.peer.context["transport"] = transport
        if self._tls is not None:
            transport.write(self._tls.start())
        elif self._gate is not None:
            transport.write(self._gate.greeting)
        elif self._client is None:
            self.ready.set_result(None)

    def _write(self, data) -> None:
        if not self.ready.done():
            self._held.append(bytes(data))
            return
        if self._tls is not None:
            data = self._tls.encrypt(data)
        self.transport.write(data)

    def _send(self, data: bytes) -> None:
        """Handshake bytes: under TLS once it is up, else as they are."""
        self.transport.write(self._tls.encrypt(data) if self._tls is not None else data)

    def data_received(self, data):
        if self._tls is not None:
            was_up = self._tls.established
            try:
                data = self._tls.receive(data)
            except (AuthenticationError, ConnectionError) as exc:
                self.transport.write(self._tls.outgoing())  # the TLS alert tells the peer why
                self._refuse(exc)
                return
            out = self._tls.outgoing()
            if out:
                self.transport.write(out)
            if not was_up and self._tls.established and self._gate is not None:
                self._send(self._gate.greeting)
            if not data:
                return
        if not self.ready.done():
            data = self._handshake_step(data)
            if not data:
                return
        try:
            self.peer.feed(data)
        except Exception as exc:  # noqa: BLE001 - a malformed stream: logged, connection closed
            logger.warning("%s: bad data, closing connection: %s", self._name, exc)
            self.transport.close()

    def _handshake_step(self, data: bytes) -> bytes | None:
        try:
            if self._gate is not None:
                rest = self._gate.feed(data)
                if rest is None:
                    return None
                self._send(self._gate.welcome)
                self._gate = None
            else:
                reply, rest = self._client.feed(data)
                if reply is not None:
                    self._send(reply)
                if rest is None:
                    return None
                self._client = None
        except AuthenticationError as exc:
            self._refuse(exc)
            return None
        held, self._held = self._held, []
        self.ready.set_result(None)
        for item in held:
            self._write(item)
        return rest

    def _refuse(self, exc: Exception) -> None:
        if not self._is_client:
            logger.warning("%s: refused a connection: %s", self._name, exc)
        elif not self.ready.done():  # the opener awaits it (a server's goes unread)
            self.ready.set_exception(exc)
        self.transport.close()

    def connection_lost(self, exc):
        if self._is_client and not self.ready.done():
            self.ready.set_exception(
                self._client.refused() if self._client is not None and self._client.answered
                else AuthenticationError(f"{self._name}: the connection closed during the "
                                         f"handshake ({exc or 'closed by the peer'})"))
        self.peer.connection_lost(str(exc) if exc else "closed")


def server_factory(handlers, name, on_close=None, tcp: bool = False):
    """Protocols for a listening server; ``tcp``: TLS too when it is on."""
    use_tls = tcp and tls.config() is not None
    return lambda: RpcProtocol(handlers, name, on_close, server=True, use_tls=use_tls)


async def open_connection(address, handlers, name, on_close=None,
                          timeout_s: float = 10.0) -> RpcPeer:
    """Connect to a Ray endpoint (Unix path or (host, port)) and authenticate."""
    loop = asyncio.get_running_loop()
    if isinstance(address, str):
        where = address
        factory = lambda: RpcProtocol(handlers, name, on_close, client_auth=where)  # noqa: E731
        _, proto = await loop.create_unix_connection(factory, address)
    else:
        host, port = address[0], int(address[1])
        where = f"{host}:{port}"
        use_tls = tls.config() is not None
        factory = lambda: RpcProtocol(handlers, name, on_close, client_auth=where,  # noqa: E731
                                      use_tls=use_tls)
        transport, proto = await loop.create_connection(factory, host, port)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        await asyncio.wait_for(asyncio.shield(proto.ready), timeout_s)
    except TimeoutError:
        proto.transport.close()
        raise AuthenticationError(f"{where} did not complete authentication in "
                                  f"{timeout_s} s") from None
    except BaseException:
        proto.transport.close()
        raise
    return proto.peer


def wrap(fut) -> asyncio.Future:
    """An asyncio future for an rpc.Future (callbacks arrive on the loop thread)."""
    loop = asyncio.get_running_loop()
    out = loop.create_future()

    def done(f):
        if out.done():
            return
        err = f.exception()
        if err is not None:
            out.set_exception(err)
        else:
            out.set_result(f.result())

    fut.add_done_callback(lambda f: loop.call_soon_threadsafe(done, f))
    return out
