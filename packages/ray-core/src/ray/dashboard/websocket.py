"""Server side of the one websocket route the job API has (``/api/jobs/<id>/logs/tail``).

Werkzeug's threaded server exposes the request's socket (``werkzeug.socket``): after
the RFC 6455 handshake we write unmasked text frames on it from the request's thread,
then a close frame. The response Flask gets back raises ``ConnectionError`` when
werkzeug tries to write it, which werkzeug treats as the client having gone (the same
trick flask-sock uses), so nothing more is written on the socket.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import select
import socket
import ssl
import struct
import time
from collections.abc import Iterator

from flask import Response, request

_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
CLOSE_WAIT_S = 2.0


def is_upgrade() -> bool:
    return (request.headers.get("Upgrade", "").lower() == "websocket"
            and "werkzeug.socket" in request.environ)


def _frame(opcode: int, payload: bytes) -> bytes:
    n = len(payload)
    if n < 126:
        header = struct.pack("!BB", 0x80 | opcode, n)
    elif n < 65536:
        header = struct.pack("!BBH", 0x80 | opcode, 126, n)
    else:
        header = struct.pack("!BBQ", 0x80 | opcode, 127, n)
    return header + payload


class _Done(Response):
    def __call__(self, environ, start_response):
        raise ConnectionError("websocket finished")  # werkzeug writes nothing more


def serve_text(messages: Iterator[str]) -> Response:
    """Answer the upgrade, send each message as a text frame, then close."""
    sock = request.environ["werkzeug.socket"]
    key = request.headers.get("Sec-WebSocket-Key", "")
    accept = base64.b64encode(hashlib.sha1((key + _GUID).encode()).digest()).decode()
    sock.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                  f"Connection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n").encode())
    try:
        for text in messages:
            if _client_closed(sock):
                break
            if text:
                sock.sendall(_frame(0x1, text.encode("utf-8")))
        sock.sendall(_frame(0x8, struct.pack("!H", 1000)))
        _await_close(sock, CLOSE_WAIT_S)
    except OSError:
        pass  # the client went away: nothing to tell it
    # The connection is finished: without this werkzeug would read the client's close
    # frame as the next HTTP request on a kept-alive connection (and log a 400).
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    return _Done()


def _await_close(sock, timeout_s: float) -> None:
    """Read (and drop) what the client sends until its close frame, EOF or the timeout
    (RFC 6455 5.5.1: the side that closed first waits for the answering close)."""
    deadline = time.monotonic() + timeout_s
    while (left := deadline - time.monotonic()) > 0:
        if not _readable(sock, left):
            return
        data = sock.recv(4096)
        if not data or (data[0] & 0x0F) == 0x8:
            return


def _client_closed(sock) -> bool:
    """True once the client sent a close frame or hung up (we never read otherwise)."""
    if not _readable(sock, 0):
        return False
    try:
        data = sock.recv(4096)
    except OSError:
        return True
    return not data or (data[0] & 0x0F) == 0x8


def _readable(sock, timeout_s: float) -> bool:
    """Whether a read would find something: over HTTPS (``RAY_USE_TLS``) decrypted bytes
    can wait in the TLS layer, above the socket that select() watches."""
    if isinstance(sock, ssl.SSLSocket) and sock.pending():
        return True
    ready, _, _ = select.select([sock], [], [], timeout_s)
    return bool(ready)


__all__ = ["is_upgrade", "serve_text"]
