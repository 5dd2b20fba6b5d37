"""The owner's in-process store of object values and where the rest live.

Entries are immutable records: an inline value (metadata + bytes), a pointer to
a node's plasma store, or an error. Waiters register for the ids they need and
are counted down as entries arrive, so ``ray.get`` of N refs costs O(N) total.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable


class Inline:
    __slots__ = ("metadata", "data")

    def __init__(self, metadata: bytes, data: bytes):
        self.metadata = metadata
        self.data = data


class InPlasma:
    __slots__ = ("node_id", "size")

    def __init__(self, node_id: bytes, size: int):
        self.node_id = node_id
        self.size = size


Entry = Inline | InPlasma


class _Waiter:
    """Counts down to zero, then wakes its thread (a held lock) or runs its callback.

    A bare lock, acquired at creation and released once, costs a tenth of an Event.
    """

    __slots__ = ("remaining", "lock", "callback")

    def __init__(self, remaining: int, callback=None):
        self.remaining = remaining
        self.callback = callback
        if callback is None:
            self.lock = threading.Lock()
            self.lock.acquire()
        else:
            self.lock = None


class MemoryStore:
    def __init__(self):
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
                    if w.remaining == 0:
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

    def wait(self, object_ids: Iterable[bytes], num_required: int, timeout_s: float | None):
        """Block until ``num_required`` of ``object_ids`` are present; False on timeout."""
        with self._lock:
            unique = set(object_ids)
            missing = [oid for oid in unique if oid not in self._entries]
            need = num_required - (len(unique) - len(missing))
            if need <= 0:
                return True
            waiter = _Waiter(need)
            for oid in missing:
                self._waiters.setdefault(oid, []).append(waiter)
        if waiter.lock.acquire(timeout=-1 if timeout_s is None else max(timeout_s, 0)):
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

    def __len__(self):
        return len(self._entries)
