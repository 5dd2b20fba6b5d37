"""A driver-side progress bar for operations made of many tasks (``ray.data``'s executor).

    bar = ProgressBar("Map", total=len(refs), unit="blocks")
    results = bar.fetch_until_complete(refs)      # ray.get with progress, in order
    # or: bar.block_until_complete(refs); or bar.update(n) from the executor's own loop
    bar.close()

Bars are drawn through ``tqdm_ray``'s manager, so they stack with bars reported by
tasks instead of overwriting them. They are off when ``tqdm`` is not installed, when
``RAY_DATA_DISABLE_PROGRESS_BARS=1`` (Ray's variable), after
``set_progress_bars(False)``, or with ``enabled=False``; a disabled bar still counts,
so callers need no branches.
"""

from __future__ import annotations

import os
import threading

from ray.experimental import tqdm_ray

_enabled_override: bool | None = None
_lock = threading.Lock()


def set_progress_bars(enabled: bool) -> bool:
    """Turn progress bars on or off for this process; returns the previous setting."""
    global _enabled_override
    if not isinstance(enabled, bool):
        raise TypeError(f"set_progress_bars takes True or False, got {enabled!r}")
    with _lock:
        previous = progress_bars_enabled()
        _enabled_override = enabled
    return previous


def progress_bars_enabled() -> bool:
    if _enabled_override is not None:
        return _enabled_override
    if os.environ.get("RAY_DATA_DISABLE_PROGRESS_BARS", "0") not in ("0", "", "false"):
        return False
    return tqdm_ray.real_tqdm() is not None


class ProgressBar:
    def __init__(self, name: str, total: int | None, unit: str = "it", *,
                 position: int = 0, enabled: bool | None = None):
        if total is not None and (isinstance(total, bool) or not isinstance(total, int)
                                  or total < 0):
            raise ValueError(f"total must be a count >= 0 or None, got {total!r}")
        self.name = name
        self.total = total
        self.unit = unit
        self.completed = 0
        self._enabled = progress_bars_enabled() if enabled is None else bool(enabled)
        self._bar = tqdm_ray.tqdm(desc=name, total=total, unit=unit, position=position,
                                  flush_interval_s=0.1) if self._enabled else None

    @property
    def enabled(self) -> bool:
        return self._enabled

    def set_description(self, name: str) -> None:
        self.name = name
        if self._bar is not None:
            self._bar.set_description(name)

    def update(self, n: int = 1, total: int | None = None) -> None:
        """``n`` more units done (and, if it changed, the new total)."""
        self.completed += n
        if total is not None:
            self.total = total
        if self._bar is not None:
            if total is not None:
                self._bar.total = total
            self._bar.update(n)

    def block_until_complete(self, refs: list) -> None:
        """Wait for every ref, advancing the bar as they finish (any order)."""
        import ray

        remaining = list(refs)
        while remaining:
            done, remaining = ray.wait(remaining, num_returns=len(remaining), timeout=0.1,
                                       fetch_local=False)
            if done:
                self.update(len(done))

    def fetch_until_complete(self, refs: list) -> list:
        """``ray.get(refs)`` (values in order), advancing the bar as tasks finish."""
        import ray

        self.block_until_complete(refs)
        return ray.get(list(refs))

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


__all__ = ["ProgressBar", "progress_bars_enabled", "set_progress_bars"]
