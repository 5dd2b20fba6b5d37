from __future__ import annotations

from typing import Any, NamedTuple


class IOContext(NamedTuple):
    """Handed to ``output`` functions: where and for which worker to write."""

    log_dir: str | None
    config: dict
    worker_index: int
    worker: Any
