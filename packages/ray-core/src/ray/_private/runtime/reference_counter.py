"""Owner-side reference counting (pure bookkeeping, no I/O).

An object stays alive while any of these hold: a live ``ObjectRef`` in this
process (local count), a submitted task that takes it as an argument, a
borrower process that reported holding it, or it has *escaped* (been
serialized inside another value, whose readers we cannot track yet; such
objects live until their owner exits). When none hold, ``on_free`` is called
with the id so the owner can drop the value and free store copies.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class _Ref:
    __slots__ = ("local", "submitted", "borrowers", "owned", "escaped", "owner")

    def __init__(self, owned: bool, owner):
        self.local = 0
        self.submitted = 0
        self.borrowers: set | None = None
        self.owned = owned
        self.escaped = False
        self.owner = owner


class ReferenceCounter:
    def __init__(self, on_free: Callable[[bytes, bool, object], None]):
        # on_free(object_id, owned, owner_address)
        self._refs: dict[bytes, _Ref] = {}
        self._lock = threading.Lock()
        self._on_free = on_free

    def add_owned(self, object_id: bytes) -> None:
        with self._lock:
            if object_id not in self._refs:
                self._refs[object_id] = _Ref(True, None)

    def add_owned_local(self, object_id: bytes) -> None:
        """``add_owned`` then ``add_local`` under one lock (a new return value's ref)."""
        with self._lock:
            ref = self._refs.get(object_id)
            if ref is None:
                ref = self._refs[object_id] = _Ref(True, None)
            ref.local += 1

    def add_local(self, object_id: bytes, owner=None) -> None:
        with self._lock:
            ref = self._refs.get(object_id)
            if ref is None:
                ref = self._refs[object_id] = _Ref(False, owner)
            ref.local += 1

    def remove_local(self, object_id: bytes) -> None:
        with self._lock:
            ref = self._refs.get(object_id)
            if ref is None:
                return
            ref.local -= 1
            freed = self._maybe_free(object_id, ref)
        if freed:
            self._on_free(object_id, ref.owned, ref.owner)

    def add_submitted(self, object_ids) -> None:
        with self._lock:
            for oid in object_ids:
                ref = self._refs.get(oid)
                if ref is not None:
                    ref.submitted += 1

    def remove_submitted(self, object_ids) -> None:
        freed = []
        with self._lock:
            for oid in object_ids:
                ref = self._refs.get(oid)
                if ref is not None:
                    ref.submitted -= 1
                    if self._maybe_free(oid, ref):
                        freed.append((oid, ref))
        for oid, ref in freed:
            self._on_free(oid, ref.owned, ref.owner)

    def mark_escaped(self, object_ids) -> None:
        with self._lock:
            for oid in object_ids:
                ref = self._refs.get(oid)
                if ref is not None:
                    ref.escaped = True

    def add_borrower(self, object_id: bytes, borrower) -> None:
        with self._lock:
            ref = self._refs.get(object_id)
            if ref is not None:
                if ref.borrowers is None:
                    ref.borrowers = set()
                ref.borrowers.add(borrower)

    def remove_borrower(self, object_id: bytes, borrower) -> None:
        with self._lock:
            ref = self._refs.get(object_id)
            if ref is None or not ref.borrowers:
                return
            ref.borrowers.discard(borrower)
            freed = self._maybe_free(object_id, ref)
        if freed:
            self._on_free(object_id, ref.owned, ref.owner)

    def _maybe_free(self, object_id: bytes, ref: _Ref) -> bool:
        if ref.local > 0 or ref.submitted > 0 or ref.borrowers or ref.escaped:
            return False
        del self._refs[object_id]
        return True

    def owns_any(self) -> bool:
        """Whether an object this process owns is still referenced (here, by a task, a
        borrower, or escaped into another value): this process must stay up for it."""
        with self._lock:
            return any(ref.owned for ref in self._refs.values())

    def is_tracked(self, object_id: bytes) -> bool:
        return object_id in self._refs

    def local_count(self, object_id: bytes) -> int:
        ref = self._refs.get(object_id)
        return 0 if ref is None else ref.local

    def snapshot(self) -> dict[bytes, dict]:
        with self._lock:
            return {
                oid: {
                    "local": r.local,
                    "submitted": r.submitted,
                    "borrowers": len(r.borrowers or ()),
                    "owned": r.owned,
                    "escaped": r.escaped,
                    "owner": r.owner,
                }
                for oid, r in self._refs.items()
            }

    def __len__(self):
        return len(self._refs)
