"""Client and store together, through the public API (store in a background thread)."""

import gc
import os
import pickle
import threading
import time

import numpy as np
import pytest

import plasma
from plasma.testing import running_store

CAPACITY = 8 * 2**20


@pytest.fixture
def store():
    with running_store(CAPACITY) as (store, socket_path):
        store.socket_path_for_tests = socket_path
        yield store


@pytest.fixture
def client(store):
    client = plasma.connect(store.socket_path_for_tests)
    yield client
    client.disconnect()


def connect(store):
    return plasma.connect(store.socket_path_for_tests)


def wait_for(predicate, timeout_s=5.0):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.005)


def test_object_id_api():
    object_id = plasma.ObjectID.from_random()
    assert plasma.ObjectID(object_id.binary()) == object_id
    assert plasma.ObjectID.from_hex(object_id.hex()) == object_id
    assert hash(plasma.ObjectID(object_id.binary())) == hash(object_id)
    assert object_id.hex() in repr(object_id)
    assert plasma.ObjectID.nil().is_nil()
    assert pickle.loads(pickle.dumps(object_id)) == object_id
    with pytest.raises(ValueError, match="20 bytes"):
        plasma.ObjectID(b"short")


def test_put_and_get_numpy_is_zero_copy_and_readonly(client):
    array = np.arange(100_000, dtype=np.int64)
    object_id = client.put({"array": array, "name": "x"})
    value = client.get(object_id)
    np.testing.assert_array_equal(value["array"], array)
    assert not value["array"].flags.writeable
    again = client.get([object_id])[0]
    assert again["array"].ctypes.data == value["array"].ctypes.data  # same shared memory


def test_create_seal_and_read_from_another_client(store, client):
    object_id = plasma.ObjectID.from_random()
    buffer = client.create(object_id, 5, metadata=b"meta")
    buffer[:] = b"hello"
    client.seal(object_id)
    other = connect(store)
    try:
        [(data, metadata)] = other.get_buffers([object_id], with_meta=True)
        assert bytes(data) == b"hello" and metadata == b"meta"
        assert data.readonly
        assert other.contains(object_id)
    finally:
        other.disconnect()


def test_get_waits_for_seal_by_another_client(store, client):
    object_id = plasma.ObjectID.from_random()
    writer = connect(store)
    try:
        buffer = writer.create(object_id, 3)
        buffer[:] = b"abc"
        result = []
        reader = threading.Thread(target=lambda: result.append(client.get_buffers([object_id])))
        reader.start()
        time.sleep(0.05)
        assert not result
        writer.seal(object_id)
        reader.join(5)
        assert bytes(result[0][0]) == b"abc"
    finally:
        writer.disconnect()


def test_get_times_out_with_not_available(client):
    missing = plasma.ObjectID.from_random()
    start = time.monotonic()
    assert client.get_buffers([missing], timeout_ms=50) == [None]
    assert time.monotonic() - start >= 0.04
    assert client.get(missing, timeout_ms=0) is plasma.ObjectNotAvailable


def test_duplicate_create_raises_object_exists(client):
    object_id = client.put(1)
    with pytest.raises(plasma.ObjectExistsError):
        client.create(object_id, 10)
    with pytest.raises(plasma.ObjectExistsError):
        client.create_and_seal(object_id, b"x")


def test_views_keep_objects_pinned_until_garbage_collected(store, client):
    object_id = client.put(np.ones(1000))
    value = client.get(object_id)
    wait_for(lambda: client.list()[object_id]["ref_count"] == 1)
    client.delete([object_id])
    client.flush()
    assert client.contains(object_id)  # deferred: still pinned by `value`
    del value
    gc.collect()
    client.flush()
    wait_for(lambda: not client.contains(object_id))
    assert store.used_bytes == 0


def test_explicit_release_unpins(client):
    object_id = client.put(np.ones(10))
    views = client.get_buffers([object_id])
    assert client.list()[object_id]["ref_count"] == 1
    client.release(object_id)
    assert client.list()[object_id]["ref_count"] == 0
    del views


def test_abort_frees_an_unsealed_object(store, client):
    object_id = plasma.ObjectID.from_random()
    client.create(object_id, 1000)
    client.abort(object_id)
    assert store.used_bytes == 0
    client.create(object_id, 10)  # the id is free again


def test_store_full_error_names_sizes(client):
    keep = client.get_buffers([client.put(np.ones(CAPACITY // 8 - 1000, dtype=np.uint8))])
    with pytest.raises(plasma.ObjectStoreFullError) as info:
        client.create(plasma.ObjectID.from_random(), CAPACITY)
    error = info.value
    assert error.requested_bytes == CAPACITY and error.capacity_bytes == CAPACITY
    assert error.pinned_bytes >= CAPACITY // 8 - 1000
    assert isinstance(error, MemoryError)
    assert pickle.loads(pickle.dumps(error)).requested_bytes == CAPACITY
    del keep


def test_lru_eviction_makes_room_for_new_objects(store, client):
    first = client.put(np.zeros(CAPACITY * 4 // 10, dtype=np.uint8))
    second = client.put(np.zeros(CAPACITY * 3 // 10, dtype=np.uint8))
    client.get(second)  # touch: `first` is now least recently used
    gc.collect()
    client.put(np.zeros(CAPACITY * 35 // 100, dtype=np.uint8))
    assert not client.contains(first)
    assert client.contains(second)


def test_evict_and_capacity(store, client):
    client.put(np.zeros(100_000, dtype=np.uint8))
    assert client.store_capacity() == CAPACITY
    assert client.evict(1) >= 100_000
    assert store.used_bytes == 0


def test_list_describes_objects(client):
    object_id = plasma.ObjectID.from_random()
    buffer = client.create(object_id, 10, b"mm")  # the creator's pin lives with the view
    info = client.list()[object_id]
    assert info["state"] == "created" and info["data_size"] == 10
    assert info["metadata_size"] == 2 and info["ref_count"] == 1
    assert info["create_time"] > 0
    del buffer


def test_notifications_for_seal_and_delete(client):
    client.subscribe()
    object_id = client.put(b"x" * 10)
    event = client.get_next_notification(timeout_s=5)
    assert event[0] == object_id and event[1] > 0
    client.delete([object_id])
    client.flush()
    assert client.get_next_notification(timeout_s=5) == (object_id, -1, event[2])
    assert client.get_next_notification(timeout_s=0.01) is None


def test_disconnect_releases_pins_and_aborts_unsealed(store, client):
    other = connect(store)
    pinned = other.put(np.ones(1000))
    views = other.get_buffers([pinned])
    other.create(plasma.ObjectID.from_random(), 5000)
    other.disconnect()
    wait_for(lambda: store.pinned_bytes == 0)
    assert client.list()[pinned]["ref_count"] == 0
    assert len(client.list()) == 1
    del views


def test_in_process_api_shares_objects_with_clients(store, client):
    events = []
    store.add_listener(lambda event, object_id, size: events.append((event, object_id, size)))
    object_id = plasma.ObjectID.from_random()
    buffer = store.create_local(object_id, 4, b"m")
    buffer[:] = b"data"
    store.seal_local(object_id)
    assert bytes(client.get_buffers([object_id])[0]) == b"data"
    view, metadata = store.get_local(object_id)
    assert bytes(view) == b"data" and metadata == b"m" and view.readonly
    assert store.contains_local(object_id)
    store.release_local(object_id)
    store.release_local(object_id)
    gc.collect()
    client.flush()
    wait_for(lambda: store.pinned_bytes == 0)
    store.delete_local(object_id)
    assert not store.contains_local(object_id)
    wait_for(lambda: ("deleted", object_id, -1) in events)  # listeners run on the loop thread
    assert ("sealed", object_id, 4) in events
    del buffer, view


def test_an_objects_extent_in_the_arena_file_reads_back_with_pread(store, client):
    object_id = plasma.ObjectID.from_random()
    buffer = store.create_local(object_id, 6, b"meta")
    buffer[:] = b"extent"
    offset = store.local_offset(object_id)  # known before the seal (a transfer's target)
    store.populate_range(offset, 6)  # a receiver's page tables, before it writes
    store.seal_local(object_id)
    offset_again, size, metadata = store.get_local_extent(object_id)  # pinned
    assert (offset_again, size, metadata) == (offset, 6, b"meta")
    assert os.pread(store.arena_fd, size, offset) == b"extent"
    assert store.get_local_extent(plasma.ObjectID.from_random()) is None
    with pytest.raises(KeyError, match="not in the store"):
        store.local_offset(plasma.ObjectID.from_random())
    store.release_local(object_id)  # the extent's pin
    store.release_local(object_id)  # the creator's
    wait_for(lambda: store.pinned_bytes == 0)
    del buffer


def test_client_is_thread_safe(client):
    errors = []

    def work(seed):
        try:
            for index in range(50):
                value = np.full(100, seed * 1000 + index)
                object_id = client.put(value)
                np.testing.assert_array_equal(client.get(object_id), value)
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_connect_to_missing_store_fails_clearly(tmp_path):
    with pytest.raises(plasma.StoreConnectionError, match="plasma_store"):
        plasma.connect(str(tmp_path / "nothing.sock"), timeout_s=0.05)


def test_operations_after_store_stops_raise_connection_error():
    with running_store(CAPACITY) as (_store, socket_path):
        client = plasma.connect(socket_path)
    with pytest.raises(plasma.StoreConnectionError):
        client.put(1)
        client.contains(plasma.ObjectID.from_random())
    client.disconnect()


def test_seal_of_unknown_object_raises(client):
    with pytest.raises(plasma.ObjectNotFoundError):
        client.seal(plasma.ObjectID.from_random())


def test_arena_file_is_never_visible_in_dev_shm():
    before = set(os.listdir("/dev/shm"))
    with running_store(CAPACITY):
        assert set(os.listdir("/dev/shm")) == before


def test_huge_pages_round_the_arena_and_leave_no_file(tmp_path):
    with running_store(3 * 2**20, directory=str(tmp_path), huge_pages=True) as (store, path):
        client = plasma.connect(path)
        assert store._arena_size == 4 * 2**20 and client.store_capacity() == 3 * 2**20
        assert client.get(client.put(np.arange(10))).sum() == 45
        client.disconnect()
    assert list(tmp_path.iterdir()) == []


def test_duplicate_ids_in_one_get_each_get_a_pin(client):
    object_id = client.put(b"abc")
    values = client.get([object_id, object_id])
    assert values == [b"abc", b"abc"]
    views = client.get_buffers([object_id, object_id])
    assert client.list()[object_id]["ref_count"] == 2
    del views


def test_eviction_is_notified_as_deletion(client):
    client.subscribe()
    object_id = client.put(np.zeros(1000))
    assert client.get_next_notification(timeout_s=5)[0] == object_id
    client.evict(1)
    assert client.get_next_notification(timeout_s=5)[:2] == (object_id, -1)


def test_many_small_objects_use_a_slab_and_are_readable_everywhere(store, client):
    other = connect(store)
    try:
        ids = [plasma.ObjectID.from_random() for _ in range(300)]
        for index, object_id in enumerate(ids):
            buffer = client.create(object_id, 100)
            buffer[:] = bytes([index % 256]) * 100
            del buffer
            client.seal(object_id, flush=index % 2 == 0)
        client.flush()
        views = other.get_buffers(ids, timeout_ms=5000)
        assert [bytes(view) for view in views] == [bytes([i % 256]) * 100 for i in range(300)]
        assert client._slab is not None  # the fast path was taken
        del views
        client.delete(ids)
        client.flush()
        wait_for(lambda: not client.list())
    finally:
        other.disconnect()
    client.disconnect()
    wait_for(lambda: store.used_bytes == 0)


def test_duplicate_small_object_id_is_reported_by_a_later_call(client):
    taken = client.put(b"first")
    for _ in range(10):  # warm the slab path up
        buffer = client.create(plasma.ObjectID.from_random(), 10)
        del buffer
    buffer = client.create(taken, 10)
    del buffer
    client.seal(taken)
    client.contains(taken)  # a round trip picks the report up...
    with pytest.raises(plasma.ObjectExistsError):
        client.contains(taken)  # ...and the next call raises it
    assert client.get(taken) == b"first"


def test_large_create_populates_its_range_when_prefault_is_off(store, monkeypatch):
    monkeypatch.setenv("PLASMA_CLIENT_PREFAULT_BYTES", "0")
    client = connect(store)
    try:
        array = np.arange(2**19 + 1, dtype=np.int64)  # 4 MiB + 8 bytes
        np.testing.assert_array_equal(client.get(client.put(array)), array)
    finally:
        client.disconnect()


def test_blocked_get_in_one_thread_does_not_stall_others(store, client):
    pending = plasma.ObjectID.from_random()
    results = {}

    def wait_for_pending():
        results["pending"] = client.get(pending, timeout_ms=10_000)

    def busy(seed):
        for index in range(30):
            object_id = client.put((seed, index))
            assert client.get(object_id) == (seed, index)
            assert (
                client.get(plasma.ObjectID.from_random(), timeout_ms=1) is plasma.ObjectNotAvailable
            )
        results[seed] = "done"

    waiter = threading.Thread(target=wait_for_pending)
    waiter.start()
    workers = [threading.Thread(target=busy, args=(seed,)) for seed in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    assert [results.get(seed) for seed in range(3)] == ["done"] * 3
    assert waiter.is_alive()  # still parked in the store, not holding up the others
    writer = connect(store)
    try:
        writer.put("finally", object_id=pending)
    finally:
        writer.disconnect()
    waiter.join(10)
    assert results["pending"] == "finally"
