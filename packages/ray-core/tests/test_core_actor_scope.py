"""ActorScope: when an actor's handles are all gone (pure bookkeeping, a fake clock)."""

from __future__ import annotations

import pytest

from ray._private.runtime.actor_scope import ActorScope

A = b"a" * 16


class _Harness:
    def __init__(self, grace=30.0):
        self.now = 100.0
        self.ended: list[bytes] = []
        self.rechecks: list[tuple[float, bytes]] = []
        self.scope = ActorScope(clock=lambda: self.now, on_out_of_scope=self.ended.append,
                                recheck_at=lambda d, aid: self.rechecks.append((d, aid)),
                                transit_grace_s=grace)


@pytest.fixture
def h():
    return _Harness()


def test_the_owners_last_handle_ends_the_actor(h):
    h.scope.own(A, detached=False)
    assert h.scope.created(A) is False and h.scope.created(A) is False
    h.scope.deleted(A)
    assert h.ended == []
    h.scope.deleted(A)
    assert h.ended == [A]
    h.scope.recheck(A)
    assert h.ended == [A]  # once


def test_a_detached_actor_outlives_its_handles(h):
    h.scope.own(A, detached=True)
    h.scope.created(A)
    h.scope.deleted(A)
    assert h.ended == []


def test_a_borrower_keeps_it_after_the_owner_dropped_its_handles(h):
    h.scope.own(A, detached=False)
    h.scope.created(A)
    h.scope.pickled(A)  # passed to a task
    h.scope.borrowed(A, "worker-1")
    h.scope.deleted(A)
    assert h.ended == [] and h.rechecks == []
    h.scope.returned(A, "worker-1")
    assert h.ended == [] and h.rechecks == [(30.0, A)]  # the copy may still be in transit
    h.now += 30.0
    h.scope.recheck(A)
    assert h.ended == [A]


def test_a_borrower_that_dies_stops_counting(h):
    h.scope.own(A, detached=False)
    h.scope.created(A)
    h.scope.borrowed(A, "worker-1")
    h.scope.borrowed(A, "worker-2")
    h.scope.deleted(A)
    h.scope.borrower_gone("worker-1")
    assert h.ended == []
    h.scope.borrower_gone("worker-2")
    assert h.ended == [A]  # never pickled: no grace


def test_a_handle_pickled_just_before_the_owner_dropped_it_waits_out_the_grace(h):
    h.scope.own(A, detached=False)
    h.scope.created(A)
    h.scope.pickled(A)  # returned from the task that created it
    h.now += 1.0
    h.scope.deleted(A)
    assert h.ended == [] and h.rechecks == [(29.0, A)]
    h.now += 10.0
    h.scope.borrowed(A, "driver")  # the caller read the return value
    h.now += 19.0
    h.scope.recheck(A)
    assert h.ended == []


def test_the_borrowing_side_reports_its_first_and_last_copy(h):
    assert h.scope.created(A) is True  # first copy here: tell the owner
    assert h.scope.created(A) is False
    assert h.scope.deleted(A) is False
    assert h.scope.deleted(A) is True  # last copy: tell the owner
    assert h.scope.deleted(A) is False  # (one too many: nothing)
    assert h.ended == []
