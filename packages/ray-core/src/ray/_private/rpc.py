"""Framed msgpack messages and a tiny request/reply layer over any byte stream.

Messages are msgpack arrays written back to back on a socket (msgpack is self
delimiting, so no length prefix is needed; the streaming unpacker enforces a
size cap so a malformed or oversized frame closes the connection instead of
exhausting memory). Four kinds::

    [REQUEST, req_id, method, args]   -> answered by [REPLY_OK, req_id, value]
                                          or [REPLY_ERR, req_id, error]
    [ONEWAY, method, args]            -> no answer

``RpcPeer`` is transport-agnostic: the threaded event loop (``transport``) and
the raylet's asyncio protocol (``aio``) both feed it bytes and give it a write
function. Handlers run on the I/O thread and must not block.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable
from typing import Any

import msgpack

from ray.exceptions import RayConnectionError

logger = logging.getLogger(__name__)

REQUEST, REPLY_OK, REPLY_ERR, ONEWAY = 0, 1, 2, 3
MAX_MESSAGE_BYTES = 256 * 1024**2

_tls = threading.local()


def _packb(msg) -> bytes:
    # Packer objects are not thread-safe; one per thread avoids building one per message.
    packer = getattr(_tls, "packer", None)
    if packer is None:
        packer = _tls.packer = msgpack.Packer(use_bin_type=True, autoreset=True)
    return packer.pack(msg)


def pack(msg) -> bytes:
    return msgpack.packb(msg, use_bin_type=True)


class RemoteError(Exception):
    """An error raised by the handler on the other side of a connection."""


class Future:
    """A minimal thread-safe future (cheaper than concurrent.futures.Future)."""

    __slots__ = ("_done", "_value", "_error", "_event", "_callbacks", "_lock")

    def __init__(self):
        self._done = False
        self._value = None
        self._error = None
        self._event = None
        self._callbacks = None
        self._lock = threading.Lock()

    def done(self) -> bool:
        return self._done

    def set_result(self, value=None, error: BaseException | None = None):
        with self._lock:
            if self._done:
                return
            self._value, self._error, self._done = value, error, True
            event, callbacks = self._event, self._callbacks
        if event is not None:
            event.set()
        if callbacks:
            for cb in callbacks:
                self._run_callback(cb)

    def set_error(self, error: BaseException):
        self.set_result(None, error)

    def add_done_callback(self, cb: Callable[[Future], None]):
        with self._lock:
            if not self._done:
                if self._callbacks is None:
                    self._callbacks = []
                self._callbacks.append(cb)
                return
        self._run_callback(cb)

    def _run_callback(self, cb) -> None:
        # Callbacks run on the I/O thread inside the reader; one that raises must not
        # be mistaken for a malformed stream (that would close the whole connection).
        try:
            cb(self)
        except Exception:
            logger.exception("a reply callback failed")

    def result(self, timeout: float | None = None):
        if not self._done:
            with self._lock:
                if not self._done and self._event is None:
                    self._event = threading.Event()
                event = self._event
            if event is not None and not event.wait(timeout):
                raise TimeoutError("RPC timed out")
        if self._error is not None:
            raise self._error
        return self._value

    def exception(self):
        return self._error


class Deferred:
    """Returned by a request handler that will answer later via ``resolve``.

    A handler may resolve it before returning it (the answer is then sent as
    soon as the dispatcher attaches the connection).
    """

    __slots__ = ("peer", "req_id", "_early")

    def __init__(self):
        self.peer: RpcPeer | None = None
        self.req_id = 0
        self._early = None

    def attach(self, peer: RpcPeer, req_id: int) -> None:
        self.peer, self.req_id = peer, req_id
        if self._early is not None:
            peer._safe_send([self._early[0], req_id, self._early[1]])

    def resolve(self, value=None):
        if self.peer is None:
            self._early = (REPLY_OK, value)
        else:
            self.peer._safe_send([REPLY_OK, self.req_id, value])

    def reject(self, error: BaseException | str):
        if self.peer is None:
            self._early = (REPLY_ERR, _error_text(error))
        else:
            self.peer._safe_send([REPLY_ERR, self.req_id, _error_text(error)])


def _error_text(error) -> str:
    return error if isinstance(error, str) else f"{type(error).__name__}: {error}"


class RpcPeer:
    """One end of a connection: decodes messages and dispatches them."""

    def __init__(
        self,
        write: Callable[[bytes], None],
        handlers: dict[str, Callable[..., Any]],
        *,
        name: str = "",
        on_close: Callable[[RpcPeer], None] | None = None,
    ):
        self._write = write
        self.handlers = handlers
        self.name = name
        self._on_close = on_close
        self._unpacker = msgpack.Unpacker(
            raw=False, max_buffer_size=MAX_MESSAGE_BYTES, strict_map_key=False
        )
        self._pending: dict[int, Future] = {}
        self._ids = itertools.count(1)
        self.closed = False
        self.context: dict[str, Any] = {}  # per-connection state for handlers

    # -- outgoing --------------------------------------------------------
    def send_raw(self, msg) -> None:
        if self.closed:
            raise RayConnectionError(f"connection {self.name} is closed")
        self._write(_packb(msg))

    def notify(self, method: str, *args) -> None:
        self.send_raw([ONEWAY, method, args])

    def call(self, method: str, *args) -> Future:
        fut = Future()
        req_id = next(self._ids)
        self._pending[req_id] = fut
        try:
            self.send_raw([REQUEST, req_id, method, args])
        except Exception as exc:  # noqa: BLE001 - handed to the caller through the future
            self._pending.pop(req_id, None)
            fut.set_error(exc)
        return fut

    def call_sync(self, method: str, *args, timeout: float | None = None):
        return self.call(method, *args).result(timeout)

    # -- incoming --------------------------------------------------------
    def feed(self, data: bytes) -> None:
        """Decode ``data``; raises on a malformed stream (the caller closes)."""
        self._unpacker.feed(data)
        for msg in self._unpacker:
            self._dispatch(msg)

    def _dispatch(self, msg) -> None:
        kind = msg[0]
        if kind == ONEWAY:
            handler = self.handlers.get(msg[1])
            if handler is None:
                logger.warning("%s: unknown message %r", self.name, msg[1])
                return
            try:
                handler(self, *msg[2])
            except Exception:
                logger.exception("%s: handler %s failed", self.name, msg[1])
        elif kind == REQUEST:
            _, req_id, method, args = msg
            handler = self.handlers.get(method)
            if handler is None:
                self.send_raw([REPLY_ERR, req_id, f"unknown method {method!r}"])
                return
            try:
                result = handler(self, *args)
            except Exception as exc:
                logger.debug("%s: request %s failed", self.name, method, exc_info=True)
                self._safe_send([REPLY_ERR, req_id, _error_text(exc)])
                return
            if isinstance(result, Deferred):
                result.attach(self, req_id)
            else:
                self._safe_send([REPLY_OK, req_id, result])
        elif kind == REPLY_OK or kind == REPLY_ERR:
            fut = self._pending.pop(msg[1], None)
            if fut is not None:
                if kind == REPLY_OK:
                    fut.set_result(msg[2])
                else:
                    fut.set_error(RemoteError(msg[2]))
        else:
            raise ValueError(f"bad message kind {kind!r}")

    def _safe_send(self, msg):
        try:
            self.send_raw(msg)
        except Exception:
            logger.debug("%s: reply lost", self.name, exc_info=True)

    def connection_lost(self, reason: str = "connection closed") -> None:
        if self.closed:
            return
        self.closed = True
        pending, self._pending = self._pending, {}
        for fut in pending.values():
            fut.set_error(RayConnectionError(f"{self.name}: {reason}"))
        if self._on_close is not None:
            try:
                self._on_close(self)
            except Exception:
                logger.exception("%s: close callback failed", self.name)
