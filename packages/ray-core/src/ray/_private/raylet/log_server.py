"""The raylet's log service: lists and reads this node's log files for any reader.

``ray logs``, ``ray.util.state.list_logs/get_log`` and the dashboard's logs view ask the
raylet of the node a log lives on (``_private/log_reader.py``), over the raylet's
authenticated TCP port, so logs of nodes on other machines are read the same way as
local ones. Two requests (messages in ``_private/log_messages.py``):

* ``list_logs(glob)``: the files of ``<session>/logs`` matching ``glob``;
* ``read_log(*ReadLogRequest)``: a chunk from a byte offset (or the last N lines); with
  ``wait_s`` a read at the end of the file waits (without blocking the raylet: a timer
  checks the size every ``POLL_S``) until bytes are appended or ``wait_s`` passes, which
  is how ``--follow`` streams.

Reads happen on the raylet's event loop: a chunk is at most ``MAX_CHUNK_BYTES`` from
the page cache (about a millisecond), and only file names in the log directory are
served (no paths, no hidden files).
"""

from __future__ import annotations

import fnmatch
import os
import time

from ray._private.log_messages import (
    FROM_TAIL,
    LogChunk,
    LogFileInfo,
    ReadLogRequest,
    check_log_name,
)
from ray._private.rpc import Deferred

POLL_S = 0.1
# How far back from the end a tail read looks for its lines, at least.
TAIL_WINDOW_BYTES = 1024 * 1024


def tail_start(data: bytes, lines: int) -> int:
    """Where the last ``lines`` lines of ``data`` start (a final newline ends a line)."""
    if lines == 0:
        return len(data)
    end = len(data) - 1 if data.endswith(b"\n") else len(data)
    pos = end
    for _ in range(lines):
        pos = data.rfind(b"\n", 0, pos)
        if pos < 0:
            return 0
    return pos + 1


def read_chunk(path: str, request: ReadLogRequest) -> LogChunk:
    """What ``request`` asks of the file at ``path`` (pure file I/O, no waiting)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if request.offset == FROM_TAIL:
            if request.tail_lines < 0:
                start = 0
            else:
                window = max(TAIL_WINDOW_BYTES, 200 * (request.tail_lines + 1))
                base = max(0, size - window)
                f.seek(base)
                start = base + tail_start(f.read(size - base), request.tail_lines)
        else:
            # Past the end: the file was truncated or replaced, so read it from the start.
            start = request.offset if request.offset <= size else 0
        f.seek(start)
        return LogChunk(f.read(min(request.max_bytes, size - start)), start, size)


class LogServer:
    def __init__(self, log_dir: str, node_description: str, loop):
        self.log_dir = log_dir
        self.node_description = node_description
        self._loop = loop

    def handlers(self) -> dict:
        return {"list_logs": self.h_list_logs, "read_log": self.h_read_log}

    def _path(self, filename: str) -> str:
        path = os.path.join(self.log_dir, check_log_name(filename))
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no log file {filename!r} on {self.node_description} "
                                    "(`ray logs --node-id ...` lists them)")
        return path

    def h_list_logs(self, peer, glob_filter: str = "*") -> list:
        if not isinstance(glob_filter, str):
            raise ValueError(f"glob_filter must be a string, got {glob_filter!r}")
        try:
            names = sorted(os.listdir(self.log_dir))
        except FileNotFoundError:
            return []
        out = []
        for name in names:
            path = os.path.join(self.log_dir, name)
            if not name.startswith(".") and fnmatch.fnmatch(name, glob_filter) \
                    and os.path.isfile(path):
                out.append(LogFileInfo(name, os.path.getsize(path)).to_wire())
        return out

    def h_read_log(self, peer, *wire):
        request = ReadLogRequest.from_wire(list(wire))
        path = self._path(request.filename)
        chunk = read_chunk(path, request)
        if chunk.data or request.wait_s <= 0 or request.offset == FROM_TAIL:
            return chunk.to_wire()
        deferred = Deferred()
        self._wait(path, request, deferred, time.monotonic() + request.wait_s)
        return deferred

    def _wait(self, path: str, request: ReadLogRequest, deferred: Deferred,
              deadline: float) -> None:
        def check():
            if deferred.peer is not None and deferred.peer.closed:
                return  # the reader went away
            try:
                chunk = read_chunk(path, request)
            except OSError as exc:  # the file went away with its session
                deferred.reject(exc)
                return
            if chunk.data or time.monotonic() >= deadline:
                deferred.resolve(chunk.to_wire())
            else:
                self._loop.call_later(POLL_S, check)

        self._loop.call_later(POLL_S, check)


__all__ = ["LogServer", "read_chunk", "tail_start"]
