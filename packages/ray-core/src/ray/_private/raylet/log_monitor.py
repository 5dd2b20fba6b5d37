"""Stream new lines of worker log files to the driver of the worker's job (pub/sub).

Whole lines go at once; a last line without its newline (``print(x, end=" ")``) goes
once the file stopped growing for a poll, so output that never ends its line still
reaches the driver (as in Ray) without splitting lines that are being written.
"""

from __future__ import annotations

import os

from ray._private.gcs import keys

_MAX_READ = 256 * 1024
# path -> size at the previous poll, for files whose last line has no newline yet.
_partial_sizes: dict[str, int] = {}


def publish_new_lines(node) -> None:
    partial: dict[str, int] = {}
    for worker in list(node.pool.workers.values()):
        if worker.job_id is None:
            continue
        lines = []
        for i, path in enumerate(worker.log_paths):
            if path.startswith("/proc/"):  # not redirected to files: nothing to stream
                continue
            try:
                size = os.path.getsize(path)
            except OSError:
                continue
            offset = worker.log_offsets[i]
            if size <= offset:
                continue
            with open(path, "rb") as f:
                f.seek(offset)
                chunk = f.read(min(size - offset, _MAX_READ))
            take = chunk.rfind(b"\n") + 1
            if take < len(chunk):  # an unfinished last line
                if _partial_sizes.get(path) == size:
                    take = len(chunk)  # it stopped growing: send it as it is
                else:
                    partial[path] = size
            if take == 0:
                continue
            worker.log_offsets[i] = offset + take
            text = chunk[:take].decode("utf-8", "replace")
            lines.extend((i == 1, line) for line in text.splitlines())
        if lines:
            node.gcs.publish_obj(
                keys.channel_logs(worker.job_id.hex()),
                {"pid": worker.pid, "ip": node.node_ip, "lines": lines,
                 "name": _process_title(worker.pid)},
            )
    _partial_sizes.clear()
    _partial_sizes.update(partial)


def _process_title(pid) -> str:
    """What the worker runs (``ray::f`` or ``ray::ClassName``), from its process title."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")[0].decode(errors="replace")
    except OSError:
        return ""
