"""The object-transfer wire protocol: what a pulling raylet asks a node's transfer
server, and the three answers it can get.

A connection (after TLS and the cluster-secret handshake) carries requests one after
another. Each is a fixed-size ``PullRequest``; the answer starts with a fixed-size
header: ``Sending`` (followed by the metadata, then the data from the requested
offset to the end; the requester sends ``ACK`` once it has all of it, and only then
does the sender let go of its copy: a ``sendfile`` hands the kernel references to
the store's pages, not a copy of them), ``Missing``, or ``Redirect`` (followed by
the address of another node that is receiving the object and serves on what it has
received: how a broadcast becomes a tree of pipelined transfers).
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

_REQUEST = struct.Struct("<20sQHB")  # object id, offset, requester's relay port, flags
_REPLY = struct.Struct("<BQI")  # kind, then two numbers whose meaning depends on it
_MAY_REDIRECT = 1
_SENDING, _MISSING, _REDIRECT = 1, 2, 3
ACK = b"\x01"


@dataclass(frozen=True)
class PullRequest:
    """Send me ``object_id``'s data from ``offset`` on. ``relay_port``: the requester's
    own transfer server, which serves on what it receives (0: it does not);
    ``may_redirect``: the requester accepts a ``Redirect`` instead of the data."""

    object_id: bytes
    offset: int = 0
    relay_port: int = 0
    may_redirect: bool = False

    SIZE = _REQUEST.size

    def pack(self) -> bytes:
        flags = _MAY_REDIRECT if self.may_redirect else 0
        return _REQUEST.pack(self.object_id, self.offset, self.relay_port, flags)

    @classmethod
    def unpack(cls, data: bytes) -> PullRequest:
        object_id, offset, relay_port, flags = _REQUEST.unpack(data)
        return cls(object_id, offset, relay_port, bool(flags & _MAY_REDIRECT))


@dataclass(frozen=True)
class Sending:
    """The data follows: ``size`` is the object's whole data size (whatever the offset)."""

    size: int
    metadata: bytes


@dataclass(frozen=True)
class Missing:
    """The object is not on this node (any more)."""


@dataclass(frozen=True)
class Redirect:
    """Ask the node serving at ``(ip, port)``: it is receiving the object too."""

    ip: str
    port: int


Reply = Sending | Missing | Redirect


def pack_reply(reply: Reply) -> bytes:
    if isinstance(reply, Sending):
        return _REPLY.pack(_SENDING, reply.size, len(reply.metadata)) + reply.metadata
    if isinstance(reply, Redirect):
        ip = reply.ip.encode()
        return _REPLY.pack(_REDIRECT, reply.port, len(ip)) + ip
    return _REPLY.pack(_MISSING, 0, 0)


def read_reply(sock: socket.socket) -> Reply:
    kind, number, length = _REPLY.unpack(recv_exact(sock, _REPLY.size))
    tail = recv_exact(sock, length) if length else b""
    if kind == _SENDING:
        return Sending(number, tail)
    if kind == _REDIRECT:
        return Redirect(tail.decode(), number)
    if kind == _MISSING:
        return Missing()
    raise ConnectionError(f"object transfer: unknown reply kind {kind}")


def recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < n:
        got = sock.recv(n - len(chunks))
        if not got:
            raise ConnectionError("transfer connection closed early")
        chunks += got
    return bytes(chunks)
