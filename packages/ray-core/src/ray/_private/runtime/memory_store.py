"""The owner's in-process store of object values and where the rest live.

Entries are immutable records: an inline value (metadata + bytes), a pointer to
a node's plasma store, or an error. Waiters register for the ids they need and
are counted down as entries arrive, so ``ray.get`` of N refs costs O(N) total.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from ray._private.messages import Inline, InPlasma, ObjectValue
from ray._private.runtime.serialization import ERROR_METADATA

Entry = ObjectValue  # Inline | InPlasma (the same classes travel in messages)


def _is_error(entry: Entry) -> bool:
    return type(entry) is Inline and entry.metadata == ERROR_METADATA


class _Waiter:
    """Counts down to zero, then wakes its thread (a held lock) or runs its callback.
    ``fail_fast``: an error arriving for one of its ids wakes it at once.

    A bare lock, acquired at creation and released once, costs a tenth of an Event.
    """

    __slots__ = ("remaining", "lock", "callback", "fail_fast")

    def __init__(self, remaining: int, callback=None, fail_fast: bool = False, lock=None):
        self.remaining = remaining
        self.callback = callback
        self.fail_fast = fail_fast
        self.lock = lock  # a held lock (or event_loop.WaitLock) for a blocking waiter


def _held_lock() -> threading.Lock:
    lock = threading.Lock()
    lock.acquire()
    return lock


class MemoryStore:
    """``held_lock`` makes what a blocked ``wait`` sleeps on: a held lock that the
    thread completing the wait releases. The runtime passes ``event_loop.WaitLock``, whose
    waiter runs the I/O loop itself meanwhile (the result it waits for then arrives on
    its own thread, without a hand-off)."""

    def __init__(self, held_lock: Callable[[], Any] = _held_lock):
        self._held_lock = held_lock
        self._entries: dict[bytes, Entry] = {}
        self._waiters: dict[bytes, list[_Waiter]] = {}
        self._lock = threading.Lock()

    def put(self, object_id: bytes, entry: Entry) -> None:
        fired = None
        with self._lock:
            self._entries[object_id] = entry
            waiters = self._waiters.pop(object_id, None)
            if waiters:
                for w in waiters:
                    w.remaining -= 1
                    if w.remaining == 0 or (w.fail_fast and w.remaining > 0
                                            and _is_error(entry)):
                        w.remaining = 0  # (fired once, even if more of its ids arrive)
                        fired = fired or []
                        fired.append(w)
        if fired:
            for w in fired:
                if w.lock is not None:
                    w.lock.release()
                else:
                    w.callback()

    def get(self, object_id: bytes) -> Entry | None:
        return self._entries.get(object_id)

    def contains(self, object_id: bytes) -> bool:
        return object_id in self._entries

    def delete(self, object_id: bytes) -> Entry | None:
        with self._lock:
            return self._entries.pop(object_id, None)

    def wait(self, object_ids: Iterable[bytes], num_required: int, timeout_s: float | None,
             fail_fast: bool = False):
        """Block until ``num_required`` of ``object_ids`` are present; False on timeout.
        ``fail_fast``: also return (True) as soon as one of them is an error."""
        with self._lock:
            unique = set(object_ids)
            missing = [oid for oid in unique if oid not in self._entries]
            need = num_required - (len(unique) - len(missing))
            if need <= 0:
                return True
            if fail_fast and any(_is_error(self._entries[oid]) for oid in unique
                                 if oid in self._entries):
                return True
            waiter = _Waiter(need, fail_fast=fail_fast, lock=self._held_lock())
            for oid in missing:
                self._waiters.setdefault(oid, []).append(waiter)
        lock = waiter.lock
        assert lock is not None, "a blocking waiter holds a lock"
        if lock.acquire(timeout=-1 if timeout_s is None else max(timeout_s, 0)):
            return True
        self._drop_waiter(waiter, missing)
        return waiter.remaining <= 0  # completed between the timeout and the drop

    def on_ready(self, object_ids: list[bytes], callback: Callable[[], None]) -> None:
        """Call ``callback`` (on whatever thread completes it) once all ids are present."""
        with self._lock:
            missing = {oid for oid in object_ids if oid not in self._entries}
            if missing:
                waiter = _Waiter(len(missing), callback)
                for oid in missing:
                    self._waiters.setdefault(oid, []).append(waiter)
                return
        callback()

    def _drop_waiter(self, waiter, ids):
        with self._lock:
            for oid in ids:
                lst = self._waiters.get(oid)
                if lst and waiter in lst:
                    lst.remove(waiter)
                    if not lst:
                        del self._waiters[oid]

    def ids_on_node(self, node_id: bytes) -> list[bytes]:
        """Ids whose value lives in the object store of ``node_id``."""
        with self._lock:
            return [oid for oid, entry in self._entries.items()
                    if type(entry) is InPlasma and entry.node_id == node_id]

    def __len__(self):
        return len(self._entries)


__all__ = ["Entry", "InPlasma", "Inline", "MemoryStore"]
