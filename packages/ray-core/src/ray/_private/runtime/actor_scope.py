"""When an actor goes out of scope: pure bookkeeping of its handles (no I/O).

As in Ray 2.x, a non-detached actor ends once no handle to it is left anywhere. Its
owner counts the handle objects alive in its own process; another process holding a
handle (one passed to a task, returned from one, stored in an object) *borrows* the
actor: its first copy tells the owner (``actor_borrowed``), its last one going tells
it again (``actor_returned``), and a borrower whose connection is lost stops counting.
A copy on its way (pickled by the owner, not yet read by anyone) is covered by a grace
period: the owner does not end the actor within ``transit_grace_s`` of its last
pickling of a handle, so a borrower reading it within that time registers first.
(Ray tracks such copies through the objects that contain them; a handle kept in an
object that nobody reads for longer than the grace outlives its actor.)

``ActorScope`` answers what the caller must do; the caller sends the messages and ends
actors (``on_out_of_scope``), and schedules ``recheck`` when asked to.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

TRANSIT_GRACE_S = 10.0


@dataclass
class _Owned:
    handles: int = 0
    detached: bool = False
    borrowers: set = field(default_factory=set)
    pickled_at: float = float("-inf")
    ended: bool = False


class ActorScope:
    """Handle counts of the actors this process owns, and of those it borrows."""

    def __init__(self, *, clock: Callable[[], float],
                 on_out_of_scope: Callable[[bytes], None],
                 recheck_at: Callable[[float, bytes], None],
                 transit_grace_s: float = TRANSIT_GRACE_S):
        self._clock = clock
        self._on_out_of_scope = on_out_of_scope
        self._recheck_at = recheck_at  # (delay in seconds, actor id): call recheck then
        self._grace = transit_grace_s
        self._owned: dict[bytes, _Owned] = {}
        self._borrowed: dict[bytes, int] = {}
        self._lock = threading.Lock()

    # -- the owner's side ------------------------------------------------------------------
    def own(self, actor_id: bytes, detached: bool) -> None:
        """This process created ``actor_id`` (before its first handle exists)."""
        with self._lock:
            self._owned[actor_id] = _Owned(detached=detached)

    def owns(self, actor_id: bytes) -> bool:
        return actor_id in self._owned

    def pickled(self, actor_id: bytes) -> None:
        """A handle left this process inside pickled bytes (a task argument, a return)."""
        with self._lock:
            owned = self._owned.get(actor_id)
            if owned is not None:
                owned.pickled_at = self._clock()

    def borrowed(self, actor_id: bytes, borrower: Hashable) -> None:
        with self._lock:
            owned = self._owned.get(actor_id)
            if owned is not None and not owned.ended:
                owned.borrowers.add(borrower)

    def returned(self, actor_id: bytes, borrower: Hashable) -> None:
        with self._lock:
            owned = self._owned.get(actor_id)
            if owned is None:
                return
            owned.borrowers.discard(borrower)
        self.recheck(actor_id)

    def borrower_gone(self, borrower: Hashable) -> None:
        """``borrower``'s process ended (or its connection to us did)."""
        with self._lock:
            held = [aid for aid, owned in self._owned.items() if borrower in owned.borrowers]
            for aid in held:
                self._owned[aid].borrowers.discard(borrower)
        for aid in held:
            self.recheck(aid)

    def recheck(self, actor_id: bytes) -> None:
        """End ``actor_id`` if nothing holds it any more (``on_out_of_scope``, once)."""
        with self._lock:
            owned = self._owned.get(actor_id)
            if (owned is None or owned.ended or owned.detached or owned.handles > 0
                    or owned.borrowers):
                return
            wait = owned.pickled_at + self._grace - self._clock()
            if wait <= 0:
                owned.ended = True
        if wait > 0:
            self._recheck_at(wait, actor_id)
        else:
            self._on_out_of_scope(actor_id)

    # -- both sides: handle objects in this process -----------------------------------------
    def created(self, actor_id: bytes) -> bool:
        """A handle object was made here. True: the first one of an actor another process
        owns (the caller tells that owner it borrows it)."""
        with self._lock:
            owned = self._owned.get(actor_id)
            if owned is not None:
                owned.handles += 1
                return False
            count = self._borrowed.get(actor_id, 0)
            self._borrowed[actor_id] = count + 1
            return count == 0

    def deleted(self, actor_id: bytes) -> bool:
        """A handle object here was collected. True: the last one of an actor another
        process owns (the caller tells that owner it returned it)."""
        with self._lock:
            owned = self._owned.get(actor_id)
            if owned is None:
                count = self._borrowed.get(actor_id, 0) - 1
                if count > 0:
                    self._borrowed[actor_id] = count
                    return False
                return self._borrowed.pop(actor_id, None) is not None
            owned.handles -= 1
        self.recheck(actor_id)
        return False


__all__ = ["ActorScope", "TRANSIT_GRACE_S"]
