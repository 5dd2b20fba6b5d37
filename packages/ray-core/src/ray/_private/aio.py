"""asyncio glue for RpcPeer: the raylet serves the same protocol as the threaded loop."""

from __future__ import annotations

import asyncio
import logging

from ray._private.rpc import RpcPeer

logger = logging.getLogger(__name__)


class RpcProtocol(asyncio.Protocol):
    def __init__(self, handlers, name, on_close=None):
        self._handlers = handlers
        self._name = name
        self._on_close = on_close
        self.peer: RpcPeer | None = None
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport
        self.peer = RpcPeer(transport.write, self._handlers, name=self._name, on_close=self._on_close)
        self.peer.context["transport"] = transport

    def data_received(self, data):
        try:
            self.peer.feed(data)
        except Exception as exc:
            logger.warning("%s: bad data, closing connection: %s", self._name, exc)
            self.transport.close()

    def connection_lost(self, exc):
        self.peer.connection_lost(str(exc) if exc else "closed")


async def open_connection(address, handlers, name, on_close=None) -> RpcPeer:
    loop = asyncio.get_running_loop()
    if isinstance(address, str):
        _, proto = await loop.create_unix_connection(
            lambda: RpcProtocol(handlers, name, on_close), address
        )
    else:
        _, proto = await loop.create_connection(
            lambda: RpcProtocol(handlers, name, on_close), address[0], address[1]
        )
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
