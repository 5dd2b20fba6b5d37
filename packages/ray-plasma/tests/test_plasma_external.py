"""The store's spilling hooks (``plasma.external``) with a small in-memory external store.

The external store here keeps spilled bytes in a dict; Ray's raylet implements the
same interface with files (``ray._private.raylet.spilling``, tested in ray-core).
"""

import asyncio
import threading
import time

import numpy as np
import pytest

import plasma
from plasma.external import ExternalStore
from plasma.testing import StoreThread

CAPACITY = 4 * 2**20
MIB = 2**20


class DictExternalStore(ExternalStore):
    """Spills the objects it was told are primary copies (it pins them) into a dict."""

    def __init__(self, store, *, restore_delay_s: float = 0.0):
        self.store = store
        self.primaries: list[plasma.ObjectID] = []  # pinned once each by us, oldest first
        self.spilled: dict[plasma.ObjectID, tuple[bytes, bytes]] = {}
        self.deleted: list[plasma.ObjectID] = []
        self.restores = 0
        self.restore_delay_s = restore_delay_s
        self.fail_restores = False
        self._restoring: set[plasma.ObjectID] = set()

    def pin_primary(self, object_id):
        assert self.store.get_local(object_id) is not None
        self.primaries.append(object_id)

    async def make_room(self, num_bytes):
        freed = 0
        for object_id in list(self.primaries):
            if freed >= num_bytes:
                break
            if not self.store.sole_local_pin(object_id):
                continue
            view, metadata = self.store.get_local(object_id)
            self.spilled[object_id] = (bytes(view), metadata)
            freed += len(view)
            del view
            self.store.release_local(object_id)  # our read
            self.store.release_local(object_id)  # the primary pin
            self.primaries.remove(object_id)
            self.store.drop_memory_copy_local(object_id)
        await asyncio.sleep(0)
        return freed > 0

    def contains(self, object_id):
        return object_id in self.spilled

    def restore(self, object_id):
        if object_id in self._restoring:
            return
        self._restoring.add(object_id)
        asyncio.get_running_loop().create_task(self._restore(object_id))

    async def _restore(self, object_id):
        try:
            await asyncio.sleep(self.restore_delay_s)
            if self.fail_restores or object_id not in self.spilled:
                self.store.restore_failed_local(object_id)
                return
            data, metadata = self.spilled[object_id]
            buffer = await self.store.create_local_when_room(object_id, len(data), metadata)
            buffer[:] = data
            del buffer
            self.restores += 1  # before the seal answers the waiting gets
            self.store.seal_local(object_id)
            self.store.release_local(object_id)
        finally:
            self._restoring.discard(object_id)

    def delete(self, object_id):
        if self.spilled.pop(object_id, None) is not None:
            self.deleted.append(object_id)


@pytest.fixture
def runner():
    runner = StoreThread(CAPACITY, prefault=False).start()
    runner.external = DictExternalStore(runner.store)
    runner.run(runner.store.set_external_store, runner.external)
    yield runner
    runner.stop()


@pytest.fixture
def client(runner):
    client = plasma.connect(runner.socket_path)
    yield client
    client.disconnect()


def put_primary(runner, client, fill: int, size: int = MIB) -> plasma.ObjectID:
    """A sealed object the test's external store pins as a primary copy."""
    object_id = plasma.ObjectID.from_random()
    buffer = client.create(object_id, size)
    np.frombuffer(buffer, np.uint8)[:] = fill
    del buffer
    client.seal(object_id)
    client.release(object_id)
    runner.run(runner.external.pin_primary, object_id)
    return object_id


def put_filler(client, size: int) -> plasma.ObjectID:
    object_id = plasma.ObjectID.from_random()
    buffer = client.create(object_id, size)
    del buffer
    client.seal(object_id)
    client.release(object_id)
    return object_id


def test_create_that_does_not_fit_waits_for_spilling_then_succeeds(runner, client):
    ids = [put_primary(runner, client, fill=i) for i in range(3)]
    # 3 MiB pinned in a 4 MiB store: 2 more MiB only fit once something is spilled.
    big = plasma.ObjectID.from_random()
    buffer = client.create(big, 2 * MIB)
    del buffer
    client.seal(big)
    client.release(big)
    assert ids[0] in runner.external.spilled  # oldest first
    assert runner.store.used_bytes <= CAPACITY


def test_get_of_a_spilled_object_restores_it_even_without_waiting(runner, client):
    ids = [put_primary(runner, client, fill=i + 1) for i in range(3)]
    filler = put_filler(client, 2 * MIB)  # spills ids[0]
    client.delete([filler])
    assert ids[0] in runner.external.spilled
    [view] = client.get_buffers([ids[0]], timeout_ms=0)
    assert view is not None and np.all(np.frombuffer(view, np.uint8) == 1)
    assert runner.external.restores == 1


def test_slow_restore_is_waited_for_and_concurrent_gets_share_it(runner, client):
    runner.external.restore_delay_s = 0.2
    ids = [put_primary(runner, client, fill=7 + i) for i in range(3)]
    filler = put_filler(client, 2 * MIB)
    client.delete([filler])
    other = plasma.connect(runner.socket_path)
    try:
        got = []
        thread = threading.Thread(target=lambda: got.append(other.get_buffers([ids[0]], 0)))
        thread.start()
        [view] = client.get_buffers([ids[0]], timeout_ms=0)
        thread.join(5)
        assert np.all(np.frombuffer(view, np.uint8) == 7)
        assert got[0][0] is not None
        assert runner.external.restores == 1
    finally:
        got.clear()  # drop the other client's views before it disconnects
        other.disconnect()


def test_failed_restore_answers_the_get_with_none(runner, client):
    ids = [put_primary(runner, client, fill=i) for i in range(3)]
    put_filler(client, 2 * MIB)
    runner.external.fail_restores = True
    started = time.monotonic()
    assert client.get_buffers([ids[0]], timeout_ms=-1) == [None]
    assert time.monotonic() - started < 5


def test_store_full_error_once_nothing_more_can_be_spilled(runner, client):
    held = plasma.ObjectID.from_random()
    buffer = client.create(held, 3 * MIB)  # pinned by the client: not spillable
    with pytest.raises(plasma.ObjectStoreFullError):
        client.create(plasma.ObjectID.from_random(), 2 * MIB)
    del buffer
    client.abort(held)


def test_object_larger_than_the_store_fails_at_once(runner, client):
    with pytest.raises(plasma.ObjectStoreFullError):
        client.create(plasma.ObjectID.from_random(), 2 * CAPACITY)


def test_create_and_seal_also_waits_for_room(runner, client):
    ids = [put_primary(runner, client, fill=i, size=MIB + MIB // 2) for i in range(2)]
    small = plasma.ObjectID.from_random()
    client.create_and_seal(small, b"x" * (MIB + MIB // 2))
    assert ids[0] in runner.external.spilled
    assert bytes(client.get_buffers([small])[0]) == b"x" * (MIB + MIB // 2)


def test_delete_of_a_spilled_object_deletes_its_outside_copy(runner, client):
    ids = [put_primary(runner, client, fill=i) for i in range(3)]
    filler = put_filler(client, 2 * MIB)
    client.delete([ids[0]])
    client.get_buffers([filler])  # a round trip: the one-way delete was handled
    assert runner.external.deleted == [ids[0]]
    assert not runner.external.contains(ids[0])


def test_parked_create_of_a_client_that_leaves_leaks_nothing(runner):
    blocker = plasma.connect(runner.socket_path)
    held = plasma.ObjectID.from_random()
    view = blocker.create(held, 3 * MIB)
    leaver = plasma.connect(runner.socket_path)
    failures = []

    def create():
        try:
            leaver.create(plasma.ObjectID.from_random(), 2 * MIB)
        except plasma.PlasmaError as error:
            failures.append(error)

    runner.external.make_room = _slow_no_room  # the create stays parked for a while
    thread = threading.Thread(target=create)
    thread.start()
    time.sleep(0.1)
    leaver._sock.close()  # gone without a goodbye
    thread.join(5)
    del view
    blocker.disconnect()
    deadline = time.monotonic() + 5
    while runner.store.used_bytes and time.monotonic() < deadline:
        time.sleep(0.01)
    assert runner.store.used_bytes == 0


async def _slow_no_room(num_bytes):
    await asyncio.sleep(0.3)
    return False


def test_create_local_when_room_spills_for_in_process_creates(runner, client):
    ids = [put_primary(runner, client, fill=i) for i in range(3)]
    object_id = plasma.ObjectID.from_random()

    async def create():
        buffer = await runner.store.create_local_when_room(object_id, 2 * MIB)
        del buffer
        runner.store.seal_local(object_id)
        runner.store.release_local(object_id)

    runner.call(create())
    assert ids[0] in runner.external.spilled
    assert client.contains(object_id)
