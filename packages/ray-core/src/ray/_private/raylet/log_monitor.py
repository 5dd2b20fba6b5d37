"""Stream new lines of worker log files to the driver of the worker's job (pub/sub)."""

from __future__ import annotations

import os

from ray._private.gcs import keys

_MAX_READ = 256 * 1024


def publish_new_lines(node) -> None:
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
            end = chunk.rfind(b"\n")
            if end < 0:
                continue
            worker.log_offsets[i] = offset + end + 1
            text = chunk[: end + 1].decode("utf-8", "replace")
            lines.extend((i == 1, line) for line in text.splitlines())
        if lines:
            node.gcs.publish_obj(
                keys.channel_logs(worker.job_id.hex()),
                {"pid": worker.pid, "ip": node.node_ip, "lines": lines,
                 "name": _process_title(worker.pid)},
            )


def _process_title(pid) -> str:
    """What the worker runs (``ray::f`` or ``ray::ClassName``), from its process title."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")[0].decode(errors="replace")
    except OSError:
        return ""
