"""The wire protocol between clients and the store.

A frame is a 4-byte little-endian length followed by that many bytes of msgpack:
an array ``[op, request_id, *args]``. Requests with ``request_id == 0`` are
one-way (seal, release, delete): the store never answers them, which saves a
round trip on the hot path. Replies are ``[REPLY, request_id, status, payload]``
with ``status`` 0 for success, else an error code and ``payload`` its arguments.
Notifications (on a subscribed connection) are ``[NOTIFY, 0, object_id,
data_size, metadata_size]``, ``data_size == -1`` meaning "deleted".

Right after accepting a connection the store sends one ``HELLO`` frame,
``[HELLO, 0, client_id, arena_size_bytes, capacity_bytes]``, together with the
arena's file descriptor as SCM_RIGHTS ancillary data.

Frames longer than ``MAX_FRAME_BYTES`` are refused (the connection is closed).
"""

from __future__ import annotations

import struct

import msgpack

from plasma import errors

MAX_FRAME_BYTES = 64 * 2**20
MAX_INLINE_BYTES = 1 * 2**20  # create_and_seal payloads above this go through create()
HEADER = struct.Struct("<I")

# client -> store
CREATE = 1
CREATE_AND_SEAL = 2
SEAL = 3
ABORT = 4
GET = 5
RELEASE = 6
DELETE = 7
CONTAINS = 8
LIST = 9
EVICT = 10
SUBSCRIBE = 11
SLAB_LEASE = 12
CREATE_IN_SLAB = 13
# store -> client
HELLO = 100
REPLY = 101
NOTIFY = 102
ASYNC_ERROR = 103  # [ASYNC_ERROR, 0, object_id, code, args]: a one-way create failed

OK = 0
ERR_EXISTS = 1
ERR_NOT_FOUND = 2
ERR_FULL = 3
ERR_BAD_REQUEST = 4

_ERROR_CODES = {
    errors.ObjectExistsError: ERR_EXISTS,
    errors.ObjectNotFoundError: ERR_NOT_FOUND,
    errors.ObjectStoreFullError: ERR_FULL,
}
_ERROR_TYPES = {code: cls for cls, code in _ERROR_CODES.items()}


def encode(message: list) -> bytes:
    body = msgpack.packb(message, use_bin_type=True)
    return HEADER.pack(len(body)) + body


def decode(body) -> list:
    message = msgpack.unpackb(body, raw=False, use_list=True)
    if not isinstance(message, list) or len(message) < 2:
        raise errors.ProtocolError(
            f"a frame must be a msgpack array [op, request_id, ...], got {message!r:.80}"
        )
    return message


def error_reply(request_id: int, error: Exception) -> bytes:
    code = _ERROR_CODES.get(type(error), ERR_BAD_REQUEST)
    args = list(error.args) if code != ERR_BAD_REQUEST else [f"{type(error).__name__}: {error}"]
    return encode([REPLY, request_id, code, args])


def async_error(key: bytes, error: Exception) -> bytes:
    code = _ERROR_CODES.get(type(error), ERR_BAD_REQUEST)
    args = list(error.args) if code != ERR_BAD_REQUEST else [f"{type(error).__name__}: {error}"]
    return encode([ASYNC_ERROR, 0, key, code, args])


def error_from_reply(code: int, args: list) -> Exception:
    cls = _ERROR_TYPES.get(code)
    if cls is None:
        return errors.ProtocolError(f"the store rejected the request: {args[0] if args else code}")
    return cls(*args)


class FrameBuffer:
    """Accumulates bytes and yields complete frame bodies."""

    def __init__(self, max_frame_bytes: int = MAX_FRAME_BYTES) -> None:
        self._buffer = bytearray()
        self._max = max_frame_bytes

    def feed(self, data) -> list[bytes]:
        buffer = self._buffer
        buffer += data
        frames = []
        position = 0
        available = len(buffer)
        while available - position >= 4:
            (length,) = HEADER.unpack_from(buffer, position)
            if length > self._max:
                raise errors.ProtocolError(
                    f"frame of {length} bytes exceeds the {self._max}-byte limit"
                )
            end = position + 4 + length
            if end > available:
                break
            frames.append(bytes(buffer[position + 4 : end]))
            position = end
        if position:
            del buffer[:position]
        return frames
