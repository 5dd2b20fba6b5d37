"""asyncio glue for RpcPeer: the raylet serves the same protocol as the threaded loop."""

from __future__ import annotations

import asyncio
import logging
import socket

from ray._private import auth
from ray._private.rpc import RpcPeer
from ray.exceptions import AuthenticationError

logger = logging.getLogger(__name__)


class RpcProtocol(asyncio.Protocol):
    """One connection; ``server=True`` for accepted ones, which must authenticate first."""

    def __init__(self, handlers, name, on_close=None, server: bool = False):
        self._handlers = handlers
        self._name = name
        self._on_close = on_close
        self._gate = auth.ServerGate() if server else None
        self.peer: RpcPeer | None = None
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport
        self.peer = RpcPeer(transport.write, self._handlers, name=self._name, on_close=self._on_close)
        self.peer.context["transport"] = transport
        if self._gate is not None:
            transport.write(self._gate.greeting)

    def data_received(self, data):
        if self._gate is not None:
            try:
                data = self._gate.feed(data)
            except AuthenticationError:
                logger.warning("%s: refused a connection without the cluster secret", self._name)
                self.transport.close()
                return
            if data is None:
                return
            self._gate = None
            self.transport.write(auth.OK)
            if not data:
                return
        try:
            self.peer.feed(data)
        except Exception as exc:
            logger.warning("%s: bad data, closing connection: %s", self._name, exc)
            self.transport.close()

    def connection_lost(self, exc):
        self.peer.connection_lost(str(exc) if exc else "closed")


async def open_connection(address, handlers, name, on_close=None) -> RpcPeer:
    """Connect to a Ray endpoint (Unix path or (host, port)) and authenticate."""
    loop = asyncio.get_running_loop()
    if isinstance(address, str):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        where = address
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        address = (address[0], int(address[1]))
        where = f"{address[0]}:{address[1]}"
    sock.setblocking(False)
    try:
        await loop.sock_connect(sock, address)
        await auth.client_handshake_async(sock, where)
        if isinstance(address, str):
            _, proto = await loop.create_unix_connection(
                lambda: RpcProtocol(handlers, name, on_close), sock=sock)
        else:
            _, proto = await loop.create_connection(
                lambda: RpcProtocol(handlers, name, on_close), sock=sock)
    except BaseException:
        sock.close()
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
