"""``ray.experimental.tqdm_ray``: progress bars from tasks and actors, drawn on the driver.

    from ray.experimental.tqdm_ray import tqdm

    @ray.remote
    def work(n):
        for _ in tqdm(range(n), desc="work"):
            ...

Inside a task or actor, a bar does not draw anything itself: at most once per
``flush_interval_s`` (and when it closes) it prints one line, ``RAY_TQDM_MAGIC`` plus its
state as JSON, to the worker's stdout. Worker output reaches the driver (the raylet
streams it over the job's log channel); the driver hands every such line to
``process_log_line``, which updates one real ``tqdm`` bar per remote bar, grouped by
worker and stacked without overlap (``_BarManager``), instead of printing it. In the
driver itself, and without ``ray.init()``, the bars go straight to the manager.

``safe_print`` prints without tearing the bars (hide, print, redraw).
"""

from __future__ import annotations

import builtins
import json
import os
import sys
import threading
import time
from collections.abc import Iterable

RAY_TQDM_MAGIC = "__ray_tqdm_magic_token__"
_print = builtins.print


def real_tqdm():
    """``tqdm.auto``, imported on first use (the driver loads this module at ``ray.init``);
    None without tqdm: bars are then tracked (and closed) without drawing."""
    global _real_tqdm_module
    if _real_tqdm_module is _UNSET:
        try:
            import tqdm.auto as module
        except ImportError:
            module = None
        _real_tqdm_module = module
    return _real_tqdm_module


_UNSET = object()
_real_tqdm_module = _UNSET


def _in_task() -> bool:
    """True inside a task or actor of a connected runtime (then bars report to the driver)."""
    import ray

    if not ray.is_initialized():
        return False
    return ray.get_runtime_context().get_task_id() is not None


class tqdm:  # noqa: N801 - Ray's (and tqdm's) name
    """A subset of tqdm's interface: iterate, ``update``, ``set_description``, ``close``."""

    DEFAULT_FLUSH_INTERVAL_SECONDS = 1.0

    def __init__(self, iterable: Iterable | None = None, desc: str | None = None,
                 total: int | None = None, unit: str | None = None,
                 position: int | None = None, flush_interval_s: float | None = None):
        if total is None and iterable is not None:
            try:
                total = len(iterable)  # type: ignore[arg-type]
            except (TypeError, AttributeError):
                total = None
        if flush_interval_s is not None and flush_interval_s < 0:
            raise ValueError(f"flush_interval_s must be >= 0, got {flush_interval_s}")
        self._iterable = iterable
        self._desc = desc or ""
        self._total = total
        self._unit = unit or "it"
        self._pos = position or 0
        self._x = 0
        self._closed = False
        self._uuid = os.urandom(16).hex()
        self._flush_interval_s = (self.DEFAULT_FLUSH_INTERVAL_SECONDS if flush_interval_s is None
                                  else flush_interval_s)
        self._last_flush = 0.0
        self._remote = _in_task()
        self._ip = _node_ip()
        self._pid = os.getpid()
        self._dump_state(force=True)

    # -- tqdm's interface ---------------------------------------------------------------
    def set_description(self, desc: str) -> None:
        self._desc = desc
        self._dump_state()

    def update(self, n: int = 1) -> None:
        self._x += n
        self._dump_state()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._dump_state(force=True)

    def refresh(self) -> None:
        self._dump_state(force=True)

    @property
    def total(self) -> int | None:
        return self._total

    @total.setter
    def total(self, total: int) -> None:
        self._total = total

    @property
    def n(self) -> int:
        return self._x

    @n.setter
    def n(self, n: int) -> None:
        self._x = n

    def __iter__(self):
        if self._iterable is None:
            raise ValueError("tqdm() was created without an iterable; call update() instead")
        for item in self._iterable:
            yield item
            self.update(1)
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # -- reporting ----------------------------------------------------------------------
    def _state(self) -> dict:
        return {"__magic_token__": RAY_TQDM_MAGIC, "x": self._x, "pos": self._pos,
                "desc": self._desc, "total": self._total, "unit": self._unit,
                "ip": self._ip, "pid": self._pid, "uuid": self._uuid, "closed": self._closed}

    def _dump_state(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_flush < self._flush_interval_s:
            return
        self._last_flush = now
        state = self._state()
        if self._remote:
            # One line to stdout; the driver turns it back into a bar.
            _print(RAY_TQDM_MAGIC + json.dumps(state), flush=True)
        else:
            instance().process_state_update(state)


def _node_ip() -> str:
    import ray

    return ray.util.get_node_ip_address() if ray.is_initialized() else "127.0.0.1"


def process_log_line(line: str) -> bool:
    """On the driver: if a worker's output ``line`` is a bar's state, update that bar and
    return True (the line must not be printed); False for ordinary output."""
    if not line.startswith(RAY_TQDM_MAGIC):
        return False
    try:
        state = json.loads(line[len(RAY_TQDM_MAGIC):])
    except ValueError:
        return False  # not ours after all: print it
    instance().process_state_update(state)
    return True


class _Bar:
    """One remote bar drawn on the driver."""

    def __init__(self, state: dict, offset: int):
        self.state = state
        self.offset = offset
        self.bar = None
        tqdm_module = real_tqdm()
        if tqdm_module is not None:
            self.bar = tqdm_module.tqdm(desc=_label(state), total=state["total"],
                                       unit=state["unit"], position=offset + state["pos"],
                                       dynamic_ncols=True, leave=False)
            self.bar.update(state["x"])

    def update(self, state: dict) -> None:
        if self.bar is not None:
            if state["desc"] != self.state["desc"]:
                self.bar.set_description(_label(state))
            if state["total"] != self.state["total"]:
                self.bar.total = state["total"]
            delta = state["x"] - self.state["x"]
            if delta:
                self.bar.update(delta)
        self.state = state

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

    def move(self, offset: int) -> None:
        if offset != self.offset and self.bar is not None:
            self.bar.clear()
            self.bar.pos = -(offset + self.state["pos"])
            self.bar.refresh()
        self.offset = offset


def _label(state: dict) -> str:
    if state["pid"] == os.getpid():
        return state["desc"]  # the driver's own bar (ray.data's): no origin to name
    return f"{state['desc']} (pid={state['pid']}, ip={state['ip']})".strip()


class _BarManager:
    """The driver's bars, grouped by worker (ip, pid); groups are stacked in the order
    they appeared, each taking as many lines as its highest ``position`` needs."""

    def __init__(self):
        self._lock = threading.RLock()
        self._groups: dict[tuple, dict[str, _Bar]] = {}
        self.closed_count = 0

    def process_state_update(self, state: dict) -> None:
        with self._lock:
            key = (state["ip"], state["pid"])
            group = self._groups.setdefault(key, {})
            bar = group.get(state["uuid"])
            if state["closed"]:
                if bar is not None:
                    bar.update(state)  # its last count, then close
                    bar.close()
                    del group[state["uuid"]]
                    self.closed_count += 1
                if not group:
                    del self._groups[key]
                self._restack()
                return
            if bar is None:
                group[state["uuid"]] = _Bar(state, self._offset_of(key))
                self._restack()
            else:
                bar.update(state)

    def _offset_of(self, key) -> int:
        offset = 0
        for other, bars in self._groups.items():
            if other == key:
                return offset
            offset += 1 + max((b.state["pos"] for b in bars.values()), default=-1)
        return offset

    def _restack(self) -> None:
        for key, bars in self._groups.items():
            for bar in bars.values():
                bar.move(self._offset_of(key))

    def bars(self) -> list[dict]:
        """The state of every open bar (what the driver shows)."""
        with self._lock:
            return [dict(b.state) for bars in self._groups.values() for b in bars.values()]

    def hide_bars(self) -> None:
        with self._lock:
            for bars in self._groups.values():
                for bar in bars.values():
                    if bar.bar is not None:
                        bar.bar.clear()

    def unhide_bars(self) -> None:
        with self._lock:
            for bars in self._groups.values():
                for bar in bars.values():
                    if bar.bar is not None:
                        bar.bar.refresh()


_manager: _BarManager | None = None
_manager_lock = threading.Lock()


def instance() -> _BarManager:
    global _manager
    with _manager_lock:
        if _manager is None:
            _manager = _BarManager()
        return _manager


def safe_print(*args, **kwargs) -> None:
    """``print`` that does not tear the bars: hide them, print, draw them again."""
    if kwargs.get("file") not in (sys.stdout, sys.stderr, None) or _manager is None:
        _print(*args, **kwargs)  # no bars here: nothing to hide
        return
    manager = instance()
    manager.hide_bars()
    try:
        _print(*args, **kwargs)
    finally:
        manager.unhide_bars()


__all__ = ["RAY_TQDM_MAGIC", "instance", "process_log_line", "safe_print", "tqdm"]
