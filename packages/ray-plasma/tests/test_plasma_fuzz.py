"""Fuzz the wire protocol: garbage gets an error or a closed connection, never a
crashed store or a corrupted arena."""

import os
import socket

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import plasma
from plasma import protocol
from plasma.client import _open_connection
from plasma.testing import running_store

CAPACITY = 4 * 2**20


@pytest.fixture(scope="module")
def fuzz_target():
    with running_store(CAPACITY) as (store, socket_path):
        client = plasma.connect(socket_path)
        reference = np.arange(10_000, dtype=np.int64)
        object_id = client.put(reference)
        yield store, socket_path, client, object_id, reference
        client.disconnect()


def send_raw(socket_path, payload: bytes) -> None:
    sock, _hello, fd = _open_connection(socket_path, timeout_s=5)
    os.close(fd)
    try:
        sock.sendall(payload)
        sock.shutdown(socket.SHUT_WR)  # the store answers, then hangs up on EOF
        sock.settimeout(10)
        while sock.recv(65536):
            pass
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        sock.close()


def assert_store_healthy(store, client, object_id, reference):
    np.testing.assert_array_equal(client.get(object_id), reference)
    probe = client.put(b"probe")
    assert client.get(probe) == b"probe"
    client.delete([probe])
    table = store._table
    with store._lock:
        entries = table.entries()
        slabs = {id(slab): slab for slab in table._slabs.values()}
        slabs.update({id(e.slab): e.slab for e in entries if e.slab is not None})
        extents = sorted((e.offset, e.extent_bytes) for e in entries if e.slab is None)
        extents += [(slab.offset, slab.size) for slab in slabs.values()]
        extents.sort()
        assert sum(size for _, size in extents) == table.used_bytes
        for (start, size), (next_start, _) in zip(extents, extents[1:]):
            assert start + size <= next_start
        for slab in slabs.values():  # objects inside a slab never overlap either
            inside = sorted((e.offset, e.extent_bytes) for e in entries if e.slab is slab)
            for (start, size), (next_start, _) in zip(inside, inside[1:]):
                assert start + size <= next_start
            assert all(slab.offset <= s and s + n <= slab.offset + slab.size for s, n in inside)


key = st.binary(min_size=20, max_size=20) | st.binary(max_size=30)
scalar = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats()
    | st.text(max_size=10)
    | st.binary(max_size=64)
)
value = st.recursive(scalar, lambda inner: st.lists(inner, max_size=4), max_leaves=8)
message = st.builds(
    lambda op, rid, args: [op, rid, *args],
    st.integers(-1, 15) | st.sampled_from([100, 101, 102]) | scalar,
    st.integers(0, 3) | scalar,
    st.lists(key | value | st.lists(key, max_size=3), max_size=5),
)


def frame(body: bytes) -> bytes:
    return protocol.HEADER.pack(len(body)) + body


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(message, min_size=1, max_size=5))
def test_random_messages_never_break_the_store(fuzz_target, messages):
    store, socket_path, client, object_id, reference = fuzz_target
    payload = b"".join(frame(msgpack.packb(m, use_bin_type=True)) for m in messages)
    send_raw(socket_path, payload)
    assert_store_healthy(store, client, object_id, reference)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.binary(max_size=200), st.booleans())
def test_garbage_and_truncated_frames_never_break_the_store(fuzz_target, garbage, with_header):
    store, socket_path, client, object_id, reference = fuzz_target
    payload = frame(garbage) if with_header else garbage
    send_raw(
        socket_path, payload[: max(1, len(payload) - 3)] if garbage[:1] == b"\x00" else payload
    )
    assert_store_healthy(store, client, object_id, reference)


def test_oversized_frame_closes_the_connection(fuzz_target):
    store, socket_path, client, object_id, reference = fuzz_target
    sock, _hello, fd = _open_connection(socket_path, timeout_s=5)
    os.close(fd)
    try:
        sock.sendall(protocol.HEADER.pack(protocol.MAX_FRAME_BYTES + 1) + b"x" * 100)
        sock.settimeout(5)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
        assert b"exceeds" in received
    finally:
        sock.close()
    assert_store_healthy(store, client, object_id, reference)


def test_bad_arguments_get_an_error_reply(fuzz_target):
    store, socket_path, client, object_id, reference = fuzz_target
    sock, _hello, fd = _open_connection(socket_path, timeout_s=5)
    os.close(fd)
    try:
        sock.sendall(frame(msgpack.packb([protocol.CREATE, 7, b"short", -5])))
        sock.settimeout(5)
        reply = protocol.FrameBuffer().feed(sock.recv(65536))
        op, request_id, status, args = protocol.decode(reply[0])
        assert (op, request_id) == (protocol.REPLY, 7) and status != protocol.OK
    finally:
        sock.shutdown(socket.SHUT_RDWR)
        sock.close()
    assert_store_healthy(store, client, object_id, reference)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.integers(64, 300_000),
    st.lists(
        st.tuples(st.integers(-2048, 70_000), st.integers(-5, 20_000), st.booleans()), max_size=12
    ),
)
def test_random_slab_placements_never_overlap(fuzz_target, slab_bytes, placements):
    store, socket_path, client, object_id, reference = fuzz_target
    sock, _hello, fd = _open_connection(socket_path, timeout_s=5)
    os.close(fd)
    try:
        sock.sendall(frame(msgpack.packb([protocol.SLAB_LEASE, 1, slab_bytes])))
        sock.settimeout(10)
        _, _, status, payload = protocol.decode(protocol.FrameBuffer().feed(sock.recv(65536))[0])
        base = payload[0] if status == protocol.OK else 0
        frames = []
        for delta, size, seal in placements:  # offsets relative to the slab, valid or not
            key = os.urandom(20)
            message = [protocol.CREATE_IN_SLAB, 0, key, base + delta, size, b""]
            frames.append(frame(msgpack.packb(message)))
            if seal:
                frames.append(frame(msgpack.packb([protocol.SEAL, 0, key])))
        probe = frame(msgpack.packb([protocol.CONTAINS, 2, b"\0" * 20]))
        sock.sendall(b"".join(frames) + probe)
        replies, received = protocol.FrameBuffer(), []
        while not any(m[:2] == [protocol.REPLY, 2] for m in received):
            received += [protocol.decode(body) for body in replies.feed(sock.recv(65536))]
        assert_store_healthy(store, client, object_id, reference)  # while the slab is live
        sock.shutdown(socket.SHUT_WR)
        while sock.recv(65536):
            pass
    finally:
        sock.close()
    assert_store_healthy(store, client, object_id, reference)
