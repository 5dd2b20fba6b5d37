"""The raylet's LocalObjectManager against a real in-process plasma store (no raylet,
no workers): what is spilled, into which files, when files go, restores and pulls."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

import plasma
from plasma.testing import StoreThread
from ray._private.raylet.spilling import RECORDS_DIR, LocalObjectManager, SpillConfig

MIB = 2**20
CAPACITY = 16 * MIB


@pytest.fixture
def node(tmp_path):
    """A store, its manager wired as the raylet wires it, and a client."""
    runner = StoreThread(CAPACITY, prefault=False).start()
    config = SpillConfig(directories=(str(tmp_path / "spill"),), threshold=0.5,
                         min_spilling_size=3 * MIB, max_io_workers=2, oom_grace_period_s=0.3)
    session = tmp_path / "session"
    session.mkdir()

    def make():
        manager = LocalObjectManager(runner.store, config, "node1", str(session))

        def on_event(event, object_id, size):
            if event == "sealed":
                manager.object_sealed(object_id.binary(), size)
            elif event == "deleted":
                manager.object_deleted(object_id.binary())

        runner.store.add_listener(on_event)
        return manager

    runner.manager = runner.run(make)
    runner.client = plasma.connect(runner.socket_path)
    runner.session = session
    yield runner
    runner.client.disconnect()
    runner.call(runner.manager.stop())
    runner.stop()


def put(node, fill: int, size: int = 2 * MIB) -> bytes:
    object_id = plasma.ObjectID.from_random()
    buffer = node.client.create(object_id, size)
    np.frombuffer(buffer, np.uint8)[:] = fill
    del buffer
    node.client.seal(object_id)
    node.client.release(object_id)
    return object_id.binary()


def files(node) -> list[str]:
    return sorted(os.path.join(d, f) for d in node.manager.directories for f in os.listdir(d))


def wait_until(predicate, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_primaries_over_the_threshold_are_spilled_oldest_first_in_fused_files(node):
    keys = [put(node, i) for i in range(6)]  # 12 MiB of 16: over the 0.5 threshold
    wait_until(lambda: len(node.manager.spilled) >= 2)
    spilled = set(node.manager.spilled)
    assert keys[0] in spilled and keys[-1] not in spilled  # the oldest went first
    # At least min_spilling_size (3 MiB) per file: 2 MiB objects travel in pairs.
    paths = {copy.path for copy in node.manager.spilled.values()}
    assert len(paths) < len(spilled)
    assert node.manager.primary_bytes <= 0.5 * CAPACITY + 2 * MIB


def test_create_that_does_not_fit_spills_instead_of_failing(node):
    keys = [put(node, i) for i in range(20)]  # 40 MiB through a 16 MiB store
    assert len(node.manager.spilled) >= 12
    for i, key in enumerate(keys):  # every one readable, restored if needed
        [view] = node.client.get_buffers([key], timeout_ms=0)
        assert view is not None and np.frombuffer(view, np.uint8)[::4096].tolist() == [i] * 512
        del view
    assert node.manager.stats.restored_objects >= 12


def test_a_file_goes_with_its_last_object(node):
    keys = [put(node, i) for i in range(8)]
    wait_until(lambda: len(node.manager.spilled) >= 2 and not node.manager._batches)
    assert files(node)
    spilled = list(node.manager.spilled)
    node.run(node.manager.free, spilled)
    assert not node.manager.spilled
    wait_until(lambda: not files(node))
    node.run(node.manager.free, keys)
    assert node.store.used_bytes == 0


def test_restored_copy_is_evictable_and_the_file_stays(node):
    keys = [put(node, i) for i in range(8)]
    wait_until(lambda: keys[0] in node.manager.spilled)
    [view] = node.client.get_buffers([keys[0]], timeout_ms=0)
    assert np.frombuffer(view, np.uint8)[0] == 0
    del view
    assert keys[0] in node.manager.spilled  # still the durable copy
    assert keys[0] not in node.manager.primaries
    assert node.run(node.store.sole_local_pin, keys[0]) is False  # nobody pins it: LRU


def test_pull_is_served_from_the_file_while_the_object_is_on_disk(node):
    keys = [put(node, 7 + i) for i in range(8)]
    wait_until(lambda: keys[0] in node.manager.spilled)
    fd, copy = node.run(node.manager.open_spilled, keys[0])
    try:
        data = os.pread(fd, copy.data_size, copy.data_offset)
    finally:
        os.close(fd)
    assert len(data) == 2 * MIB and set(data) == {7}


def test_freed_while_being_written_is_not_kept(node):
    keys = [put(node, i) for i in range(4)]

    async def spill_and_free():
        task = node.manager._start_batch([keys[0]])
        node.manager.free([keys[0]])  # the owner frees it while the thread writes it
        return await task

    assert node.call(spill_and_free()) == 0
    assert keys[0] not in node.manager.spilled
    wait_until(lambda: not files(node))


def test_nothing_spillable_gives_up_after_the_grace_period(node):
    held = plasma.ObjectID.from_random()
    view = node.client.create(held, 12 * MIB)  # unsealed: nobody can move it
    started = time.monotonic()
    with pytest.raises(plasma.ObjectStoreFullError):
        node.client.create(plasma.ObjectID.from_random(), 8 * MIB)
    assert 0.25 < time.monotonic() - started < 5
    del view
    node.client.abort(held)


def test_stop_removes_the_directories_and_the_record(node):
    [put(node, i) for i in range(8)]
    wait_until(lambda: files(node))
    record = node.session / RECORDS_DIR / "node1.json"
    assert record.exists()
    node.call(node.manager.stop())
    assert not any(os.path.exists(d) for d in node.manager.directories)
    assert not record.exists()


def test_restore_of_a_corrupted_file_answers_the_get_with_nothing(node):
    keys = [put(node, i) for i in range(8)]
    wait_until(lambda: keys[0] in node.manager.spilled)
    path = node.manager.spilled[keys[0]].path
    with open(path, "r+b") as f:  # the record header no longer matches
        f.write(b"\0" * 20)
    assert node.client.get_buffers([keys[0]], timeout_ms=0) == [None]
