"""The process-wide runtime handle, set by ray.init and cleared by ray.shutdown.

Two implementations sit behind one interface (``interface.Runtime``): the cluster
runtime (``core_worker.CoreWorker``) and the serial ``local_mode.LocalRuntime``.
Public API functions call ``current()`` and never branch on the mode.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ray._private.runtime.interface import Runtime

_runtime: Runtime | None = None


def current() -> Runtime:
    if _runtime is None:
        raise RuntimeError(
            "Ray has not been started yet: call ray.init() first "
            "(or ray.init(address='auto') to join a running cluster)."
        )
    return _runtime


def maybe_current() -> Runtime | None:
    return _runtime


def set_current(runtime: Runtime | None) -> None:
    global _runtime
    _runtime = runtime
