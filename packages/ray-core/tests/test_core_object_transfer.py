"""Object transfer between nodes' object managers: real plasma stores and real sockets
on loopback, several nodes in this process (one event loop), and the in-memory GCS for
the node table. What runs through a whole cluster is in test_core_multinode.py."""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading

import numpy as np
import pytest

from plasma import PlasmaStore as Store
from ray._private import tls
from ray._private.gcs import InMemoryGcs, keys
from ray._private.raylet import object_manager
from ray._private.raylet.object_manager import FANOUT, ObjectManager
from ray._private.raylet.spilling import LocalObjectManager
from ray._private.raylet.transfer_wire import (
    Missing,
    PullRequest,
    Redirect,
    Sending,
    pack_reply,
    read_reply,
)

MIB = 2**20


class _Node:
    def __init__(self, name: str, store: Store, manager: ObjectManager):
        self.name = name
        self.node_id = hashlib.sha1(name.encode()).digest()[:16]
        self.store = store
        self.manager = manager
        self.local_objects = manager.local_objects


class _Cluster:
    """Nodes sharing one event loop thread; each a store and an object manager."""

    def __init__(self, tmp_path):
        self.tmp_path = tmp_path
        self.gcs = InMemoryGcs()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.nodes: list[_Node] = []

    def run(self, coro, timeout=60):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def add_node(self, name: str, capacity: int = 160 * MIB) -> _Node:
        async def start():
            store = Store(capacity, prefault=False, name_prefix=f"test-transfer-{name}")
            await store.start(str(self.tmp_path / f"{name}.sock"))
            local = LocalObjectManager(store, None, name, str(self.tmp_path))
            return store, ObjectManager(store=store, local_objects=local, gcs=self.gcs,
                                        node_ip="127.0.0.1")

        store, manager = self.run(start())
        node = _Node(name, store, manager)
        self.gcs.hset_obj(keys.NODES, node.node_id.hex(), {
            "node_id": node.node_id.hex(), "node_ip": "127.0.0.1",
            "object_transfer_port": manager.port, "alive": True})
        self.nodes.append(node)
        return node

    def put(self, node: _Node, data: bytes, metadata: bytes = b"meta") -> bytes:
        object_id = os.urandom(20)
        view = node.store.create_local(object_id, len(data), metadata)
        view[:] = data
        view.release()
        node.store.seal_local(object_id)
        return object_id

    def fetch(self, node: _Node, object_id: bytes, holder: _Node):
        return self.run(node.manager.fetch(object_id, holder.node_id))

    def read(self, node: _Node, object_id: bytes) -> tuple[bytes, bytes]:
        view, metadata = node.store.get_local(object_id)
        try:
            return bytes(view), metadata
        finally:
            view.release()
            node.store.release_local(object_id)

    def close(self):
        async def stop():
            for node in self.nodes:
                node.manager.stop()
                await node.store.stop()

        self.run(stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture
def cluster(tmp_path):
    c = _Cluster(tmp_path)
    yield c
    c.close()


@pytest.fixture
def slow_sends(monkeypatch):
    """Sends go in 1 MiB pieces, 8 ms apart: transfers overlap long enough for later
    pullers to find the earlier ones still running."""
    real = object_manager._send_range
    hooks: list = []

    def send_range(conn, fd, offset, length):
        end = offset + length
        while offset < end:
            piece = min(MIB, end - offset)
            for hook in hooks:
                hook(fd, offset)
            real(conn, fd, offset, piece)
            offset += piece
            threading.Event().wait(0.008)

    monkeypatch.setattr(object_manager, "_send_range", send_range)
    return hooks


def test_wire_messages_round_trip():
    request = PullRequest(b"\7" * 20, relay_port=4242, may_redirect=True)
    assert PullRequest.unpack(request.pack()) == request
    assert len(request.pack()) == PullRequest.SIZE
    a, b = __import__("socket").socketpair()
    with a, b:
        for reply in (Sending(10**9, b"\0meta"), Missing(), Redirect("10.0.0.7", 6100)):
            a.sendall(pack_reply(reply))
            assert read_reply(b) == reply


def test_a_pull_brings_the_bytes_and_metadata_and_acknowledges(cluster):
    holder, reader = cluster.add_node("holder"), cluster.add_node("reader")
    data = np.random.default_rng(1).integers(0, 255, 24 * MIB, dtype=np.uint8).tobytes()
    object_id = cluster.put(holder, data, b"\1pickled")
    sender = cluster.fetch(reader, object_id, holder)
    assert sender == ("127.0.0.1", holder.manager.port)
    assert cluster.read(reader, object_id) == (data, b"\1pickled")
    assert cluster.fetch(reader, object_id, holder) is None  # here already
    # The holder let go of its send pin once the reader acknowledged: only the creator's
    # pin is left there.
    assert holder.store.pinned_bytes == len(data)


def test_a_missing_object_is_a_clear_error(cluster):
    holder, reader = cluster.add_node("holder"), cluster.add_node("reader")
    with pytest.raises(KeyError, match="is not on node"):
        cluster.fetch(reader, os.urandom(20), holder)
    assert reader.store.num_objects == 0


def test_pullers_beyond_the_fanout_are_served_by_relays_while_they_receive(cluster, slow_sends):
    holder = cluster.add_node("holder")
    readers = [cluster.add_node(f"reader{i}") for i in range(5)]
    data = np.random.default_rng(2).integers(0, 255, 32 * MIB, dtype=np.uint8).tobytes()
    object_id = cluster.put(holder, data)

    async def all_at_once():
        return await asyncio.gather(*(r.manager.fetch(object_id, holder.node_id)
                                      for r in readers))

    senders = cluster.run(all_at_once())
    for reader in readers:
        assert cluster.read(reader, object_id)[0] == data
    holder_address = ("127.0.0.1", holder.manager.port)
    from_holder = [s for s in senders if s == holder_address]
    assert len(from_holder) == FANOUT  # the holder's link carried it FANOUT times
    relay_ports = {r.manager.port for r in readers}
    assert all(s[1] in relay_ports for s in senders if s != holder_address)
    # Relays let go of the pins they took for their pullers.
    for reader in readers:
        assert reader.store.pinned_bytes == len(data)  # the pulled copy's own pin only


def test_a_relay_that_fails_sends_its_puller_back_to_the_holder(cluster, slow_sends):
    holder = cluster.add_node("holder")
    first, second, third = (cluster.add_node(n) for n in ("first", "second", "third"))
    data = np.random.default_rng(3).integers(0, 255, 24 * MIB, dtype=np.uint8).tobytes()
    object_id = cluster.put(holder, data)

    def first_breaks(fd, offset):  # what ``first`` relays breaks after 2 MiB
        if fd == first.store.arena_fd and offset >= 2 * MIB:
            raise ConnectionResetError("the relay's link went down")

    slow_sends.append(first_breaks)

    async def pulls():
        fetches = [asyncio.ensure_future(first.manager.fetch(object_id, holder.node_id))]
        while holder.manager.sends_of(object_id) < 1:
            await asyncio.sleep(0.002)
        fetches.append(asyncio.ensure_future(second.manager.fetch(object_id, holder.node_id)))
        while holder.manager.sends_of(object_id) < FANOUT:
            await asyncio.sleep(0.002)
        # The holder sends FANOUT copies: the next puller goes to ``first``, the relay
        # with the fewest pullers.
        fetches.append(asyncio.ensure_future(third.manager.fetch(object_id, holder.node_id)))
        return await asyncio.gather(*fetches)

    senders = cluster.run(pulls())
    assert senders[2] == ("127.0.0.1", holder.manager.port)  # after the relay failed
    for node in (first, second, third):
        assert cluster.read(node, object_id)[0] == data
    assert first.manager.sends_of(object_id) == 0


def test_small_objects_are_never_relayed(cluster, slow_sends):
    holder = cluster.add_node("holder")
    readers = [cluster.add_node(f"reader{i}") for i in range(4)]
    data = b"x" * (2 * MIB)
    object_id = cluster.put(holder, data)

    async def all_at_once():
        return await asyncio.gather(*(r.manager.fetch(object_id, holder.node_id)
                                      for r in readers))

    senders = cluster.run(all_at_once())
    assert set(senders) == {("127.0.0.1", holder.manager.port)}


def test_under_tls_the_bytes_pass_through_the_encryption_and_relays_work(
        cluster, certs, monkeypatch, slow_sends):
    cert, key, ca = certs["node"]  # (conftest)
    for name, value in ((tls.USE_ENV, "1"), (tls.CERT_ENV, cert), (tls.KEY_ENV, key),
                        (tls.CA_ENV, ca)):
        monkeypatch.setenv(name, value)
    holder = cluster.add_node("holder")
    readers = [cluster.add_node(f"reader{i}") for i in range(3)]
    data = np.random.default_rng(4).integers(0, 255, 12 * MIB, dtype=np.uint8).tobytes()
    object_id = cluster.put(holder, data, b"tls")

    async def all_at_once():
        return await asyncio.gather(*(r.manager.fetch(object_id, holder.node_id)
                                      for r in readers))

    senders = cluster.run(all_at_once())
    for reader in readers:
        assert cluster.read(reader, object_id) == (data, b"tls")
    assert ("127.0.0.1", holder.manager.port) in senders


def test_a_pulled_copy_is_pinned_once_per_reader_until_each_has_read_it(cluster):
    holder, reader = cluster.add_node("holder"), cluster.add_node("reader")
    object_id = cluster.put(holder, b"p" * MIB)
    cluster.fetch(reader, object_id, holder)
    local = reader.local_objects

    def on_loop(fn, *args):
        async def call():
            return fn(*args)
        return cluster.run(call())

    # Two readers asked for it: the first gets the transfer's own pin, the second one more.
    assert on_loop(local.claim_pulled, object_id) and on_loop(local.claim_pulled, object_id)
    on_loop(reader.manager.release_pulled, [object_id])
    assert reader.store.pinned_bytes == MIB  # the second reader's pin
    on_loop(reader.manager.release_pulled, [object_id, object_id])  # (one too many: ignored)
    assert reader.store.pinned_bytes == 0  # an evictable secondary copy now
    assert on_loop(local.claim_pulled, os.urandom(20)) is False  # not here
