"""The object lifecycle state machine, with no sockets or memory."""

import pytest

from plasma.errors import ObjectExistsError, ObjectNotFoundError, ObjectStoreFullError
from plasma.object_table import ObjectState, ObjectTable

A, B, C, D = (bytes([i]) * 20 for i in range(1, 5))
ALICE, BOB = 1, 2


def make_table(capacity=1024):
    return ObjectTable(capacity, clock=lambda: 123.0)


def sealed(table, key, size, client=ALICE, release=True):
    table.create(key, size, b"", client)
    table.seal(key, client)
    if release:
        table.release(key, client)


def test_create_pins_for_creator_and_seal_makes_it_visible():
    table = make_table()
    entry, evicted = table.create(A, 100, b"meta", ALICE)
    assert evicted == [] and entry.state is ObjectState.CREATED
    assert entry.pins == {ALICE: 1} and entry.create_time == 123.0
    assert table.pin(A, BOB) is None  # not sealed yet
    table.seal(A, ALICE)
    assert table.is_sealed(A)
    assert table.pin(A, BOB) is entry and entry.pin_count == 2


def test_duplicate_create_raises_object_exists():
    table = make_table()
    table.create(A, 10, b"", ALICE)
    with pytest.raises(ObjectExistsError, match=A.hex()):
        table.create(A, 10, b"", BOB)


def test_only_the_creator_can_seal_or_abort():
    table = make_table()
    table.create(A, 10, b"", ALICE)
    with pytest.raises(ObjectNotFoundError, match="another client"):
        table.seal(A, BOB)
    with pytest.raises(ObjectNotFoundError, match="another client"):
        table.abort(A, BOB)
    table.abort(A, ALICE)
    assert table.get(A) is None and table.used_bytes == 0


def test_sealed_unpinned_objects_are_evicted_in_lru_order():
    table = make_table(capacity=256)
    sealed(table, A, 64)
    sealed(table, B, 64)
    sealed(table, C, 64)
    table.pin(A, BOB)  # A becomes most recently used once released
    table.release(A, BOB)
    _, evicted = table.create(D, 128, b"", ALICE)
    assert [entry.key for entry in evicted] == [B, C]
    assert table.get(A) is not None


def test_pinned_objects_are_not_evicted_and_full_error_reports_sizes():
    table = make_table(capacity=256)
    sealed(table, A, 128, release=False)  # still pinned by its creator
    sealed(table, B, 64)
    with pytest.raises(ObjectStoreFullError) as info:
        table.create(C, 200, b"", BOB)
    error = info.value
    assert (error.requested_bytes, error.capacity_bytes, error.pinned_bytes) == (200, 256, 128)
    assert "capacity" in str(error) and "Release" in str(error)
    assert table.get(B) is not None  # nothing was evicted for a hopeless request


def test_delete_is_deferred_until_the_last_pin_is_released():
    table = make_table()
    sealed(table, A, 10)
    table.pin(A, BOB)
    assert table.delete(A) == []
    assert table.get(A) is not None
    freed = table.release(A, BOB)
    assert [entry.key for entry in freed] == [A]
    assert table.get(A) is None and table.used_bytes == 0


def test_disconnect_releases_pins_and_aborts_unsealed_objects():
    table = make_table()
    sealed(table, A, 10)
    table.pin(A, BOB)
    table.create(B, 10, b"", BOB)
    table.delete(A)
    aborted, freed = table.disconnect(BOB)
    assert [entry.key for entry in aborted] == [B]
    assert [entry.key for entry in freed] == [A]
    assert len(table) == 0 and table.used_bytes == 0 and table.pinned_bytes == 0


def test_release_before_seal_leaves_object_evictable_after_seal():
    table = make_table()
    table.create(A, 10, b"", ALICE)
    table.release(A, ALICE)
    assert table.pinned_bytes == 64  # unsealed objects are never evictable
    table.seal(A, ALICE)
    assert table.pinned_bytes == 0
    table.disconnect(ALICE)
    assert table.evict(1)[0].key == A


def test_evict_frees_at_least_the_requested_bytes():
    table = make_table()
    for key in (A, B, C):
        sealed(table, key, 64)
    evicted = table.evict(100)
    assert [entry.key for entry in evicted] == [A, B]
    assert table.evict(10_000)[0].key == C
    assert table.used_bytes == 0


def test_slab_objects_are_placed_upwards_only_inside_the_clients_slab():
    table = make_table(capacity=4096)
    slab, _ = table.lease_slab(ALICE, 1024)
    entry = table.create_in_slab(A, slab.offset, 100, b"", ALICE)
    assert entry.slab is slab and table.used_bytes == 1024
    with pytest.raises(ValueError, match="not free"):
        table.create_in_slab(B, slab.offset, 10, b"", ALICE)  # overlaps A
    with pytest.raises(ValueError, match="not free"):
        table.create_in_slab(B, slab.offset + 1024, 10, b"", ALICE)  # outside the slab
    with pytest.raises(ValueError, match="not free"):
        table.create_in_slab(B, slab.offset + 128, 10, b"", BOB)  # not Bob's slab
    with pytest.raises(ObjectExistsError):
        table.create_in_slab(A, slab.offset + 128, 10, b"", ALICE)
    table.create_in_slab(B, slab.offset + 128, 10, b"", ALICE)


def test_retired_slab_is_freed_when_its_last_object_goes():
    table = make_table(capacity=4096)
    slab, _ = table.lease_slab(ALICE, 1024)
    table.create_in_slab(A, slab.offset, 100, b"", ALICE)
    table.seal(A, ALICE)
    table.release(A, ALICE)
    table.lease_slab(ALICE, 1024)  # retires the first slab; A keeps it allocated
    assert table.used_bytes == 2048
    table.delete(A)
    assert table.used_bytes == 1024
    table.disconnect(ALICE)  # retires the empty current slab
    assert table.used_bytes == 0 and table.allocator.free_extents() == [(0, 4096)]


def test_disconnect_aborts_unsealed_slab_objects_and_frees_the_slab():
    table = make_table(capacity=4096)
    slab, _ = table.lease_slab(ALICE, 1024)
    table.create_in_slab(A, slab.offset, 100, b"", ALICE)
    aborted, _ = table.disconnect(ALICE)
    assert [entry.key for entry in aborted] == [A]
    assert table.used_bytes == 0


@pytest.mark.parametrize(
    "error",
    [
        ObjectExistsError("ab" * 20),
        ObjectNotFoundError("ab" * 20, "cannot seal"),
        ObjectStoreFullError(10, 20, 5),
    ],
)
def test_errors_pickle_with_their_fields(error):
    import pickle

    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error) and str(copy) == str(error)
    assert "ab" * 20 in str(error) or "capacity" in str(error)
