"""The messages of the raylets' log service (``raylet/log_server.py``), as small typed
classes converted to and from their msgpack arrays here only.

    reader ──list_logs(glob)──> raylet ──[LogFileInfo...]──> reader
    reader ──read_log(*ReadLogRequest)──> raylet ──LogChunk──> reader

A follower reads with ``wait_s`` > 0: the raylet answers at once when the file has bytes
past ``offset``, else when some arrive or ``wait_s`` has passed (an empty chunk), so a
``ray logs -f`` costs one request per change or per wait, not a poll loop of its own.
"""

from __future__ import annotations

import os
from typing import Any

from ray._private.messages import MalformedMessage

# The most one read returns (a follower asks again for the rest).
MAX_CHUNK_BYTES = 4 * 1024 * 1024
# The longest a read may wait for new bytes (the reader's RPC timeout is above it).
MAX_WAIT_S = 30.0
FROM_TAIL = -1  # ReadLogRequest.offset: start ``tail_lines`` lines before the end


def check_log_name(filename: Any) -> str:
    """A file name in a node's log directory (no path, no hidden file), or ValueError."""
    if not isinstance(filename, str) or not filename or os.path.basename(filename) != filename \
            or filename.startswith("."):
        raise ValueError(f"a log is named by a file name in the node's log directory (as "
                         f"`ray logs` lists them), got {filename!r}")
    return filename


class LogFileInfo:
    """One file of a node's log directory."""

    __slots__ = ("name", "size_bytes")

    def __init__(self, name: str, size_bytes: int):
        self.name = name
        self.size_bytes = size_bytes

    def to_wire(self) -> list:
        return [self.name, self.size_bytes]

    @classmethod
    def from_wire(cls, wire: Any) -> LogFileInfo:
        if not isinstance(wire, list | tuple) or len(wire) != 2:
            raise MalformedMessage(f"LogFileInfo: expected [name, size], got {wire!r}")
        return cls(str(wire[0]), int(wire[1]))

    def __repr__(self) -> str:
        return f"LogFileInfo({self.name}, {self.size_bytes} bytes)"


class ReadLogRequest:
    """Read ``filename`` from byte ``offset`` (or its last ``tail_lines`` lines, with
    ``offset=FROM_TAIL``; ``tail_lines`` < 0 there means the whole file), at most
    ``max_bytes``; with ``wait_s`` > 0 wait that long for bytes past ``offset``."""

    __slots__ = ("filename", "offset", "tail_lines", "max_bytes", "wait_s")

    def __init__(self, filename: str, offset: int = FROM_TAIL, tail_lines: int = -1,
                 max_bytes: int = MAX_CHUNK_BYTES, wait_s: float = 0.0):
        self.filename = check_log_name(filename)
        if not isinstance(offset, int) or offset < FROM_TAIL:
            raise ValueError(f"offset must be a byte offset >= 0 or FROM_TAIL, got {offset!r}")
        if not isinstance(tail_lines, int):
            raise ValueError(f"tail_lines must be an int, got {tail_lines!r}")
        self.offset = offset
        self.tail_lines = tail_lines
        self.max_bytes = max(1, min(int(max_bytes), MAX_CHUNK_BYTES))
        self.wait_s = max(0.0, min(float(wait_s), MAX_WAIT_S))

    def to_wire(self) -> list:
        return [self.filename, self.offset, self.tail_lines, self.max_bytes, self.wait_s]

    @classmethod
    def from_wire(cls, wire: Any) -> ReadLogRequest:
        if not isinstance(wire, list | tuple) or len(wire) != 5:
            raise MalformedMessage(f"ReadLogRequest: expected 5 fields, got {wire!r}")
        try:
            return cls(*wire)
        except (TypeError, ValueError) as exc:
            raise MalformedMessage(f"ReadLogRequest: {exc}") from None


class LogChunk:
    """Bytes ``[start, end)`` of a log file whose size was ``size_bytes`` when read."""

    __slots__ = ("data", "start", "end", "size_bytes")

    def __init__(self, data: bytes, start: int, size_bytes: int):
        self.data = data
        self.start = start
        self.end = start + len(data)
        self.size_bytes = size_bytes

    def to_wire(self) -> list:
        return [self.data, self.start, self.size_bytes]

    @classmethod
    def from_wire(cls, wire: Any) -> LogChunk:
        if not isinstance(wire, list | tuple) or len(wire) != 3 or not isinstance(wire[0], bytes):
            raise MalformedMessage(f"LogChunk: expected [bytes, start, size], got {wire!r}")
        return cls(wire[0], int(wire[1]), int(wire[2]))


__all__ = ["FROM_TAIL", "MAX_CHUNK_BYTES", "MAX_WAIT_S", "LogChunk", "LogFileInfo",
           "ReadLogRequest", "check_log_name"]
