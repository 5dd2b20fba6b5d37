"""Robustness of the control-plane protocol: bad input gets an error or a closed
connection, never a crashed daemon or a wrong answer for other clients.

Hypothesis drives real sockets against a running node: the raylet's RPC server
(TCP and Unix), the object-transfer server, the plasma store and a worker RPC
server (the driver's own, the same code every worker runs). Each fuzzed connection
first passes the cluster-secret handshake (``_connect``) so the protocol behind it
is what gets fuzzed; the handshake itself is fuzzed separately. After every example
the daemons must be alive, and healthy clients must still get right answers.
The default run is bounded (``RAY_FUZZ_EXAMPLES``, 60 per target); e.g.
``RAY_FUZZ_EXAMPLES=2000`` for a long run.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct

import msgpack
import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ray
from ray._private import auth, rpc
from ray._private.raylet.transfer_wire import PullRequest
from ray._private.transport import connect_socket

EXAMPLES = int(os.environ.get("RAY_FUZZ_EXAMPLES", "60"))
FUZZ_SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                         suppress_health_check=list(HealthCheck))
MESSAGES_SENT = {"count": 0, "bytes": 0}


def _pair(handlers_a=None, handlers_b=None):
    """Two RpcPeers wired back to back in memory (each write feeds the other side)."""
    box = {}
    a = rpc.RpcPeer(lambda data: box["b"].feed(data), handlers_a or {}, name="a")
    b = rpc.RpcPeer(lambda data: box["a"].feed(data), handlers_b or {}, name="b")
    box["a"], box["b"] = a, b
    return a, b


def test_a_failing_reply_callback_does_not_break_the_connection():
    a, _b = _pair(handlers_b={"echo": lambda peer, x: x})

    def explode(_fut):
        raise RuntimeError("callback bug")

    fut = a.call("echo", 1)
    fut.add_done_callback(explode)  # already answered: runs now, error logged
    fut2 = a.call("echo", 2)  # the same peer keeps working
    fut2.add_done_callback(explode)
    assert fut.result(1) == 1 and fut2.result(1) == 2
    assert a.call("echo", 3).result(1) == 3
    assert not a.closed


def test_a_reply_callback_raising_inside_feed_is_contained():
    box = {}
    a = rpc.RpcPeer(lambda data: box.setdefault("out", []).append(data), {}, name="a")
    fut = a.call("m")
    fut.add_done_callback(lambda f: 1 / 0)
    req_id = 1
    a.feed(rpc.pack([rpc.REPLY_OK, req_id, "v"]))  # must not raise
    assert fut.result(1) == "v"


@pytest.mark.parametrize("kind", [9, -1])
def test_unknown_message_kind_raises_for_the_transport_to_close(kind):
    a, _ = _pair()
    with pytest.raises(ValueError):
        a.feed(rpc.pack([kind, 1, "x", []]))


def test_connecting_to_a_dead_endpoint_without_retry_fails_at_once(tmp_path):
    """Workers and remote raylets listen before their address is published, so a
    refused connect means the process is gone; the I/O thread must not spin on it
    (chaos: every spillback or lease naming a killed process stalled it 5 s)."""
    import socket
    import time

    from ray._private.transport import connect_socket

    dead_path = str(tmp_path / "dead.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(dead_path)
    listener.close()  # the file stays, nobody listens: what a killed worker leaves
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead_port = s.getsockname()[1]
    for address in (dead_path, ("127.0.0.1", dead_port)):
        start = time.monotonic()
        with pytest.raises(OSError):
            connect_socket(address, timeout_s=5.0, retry=False)
        assert time.monotonic() - start < 1.0



# -- fuzzing live daemons ------------------------------------------------------------------

# Handlers that end a process or a worker on purpose: legitimate for an authenticated
# peer (the threat model trusts holders of the cluster secret), so not fuzzed.
_ADMIN = {"shutdown", "kill_worker", "exit"}
RAYLET_METHODS = sorted({"register_worker", "register_driver", "request_lease", "return_lease",
                         "notify_blocked", "notify_unblocked", "free_objects", "pull_object",
                         "read_object_chunk", "object_info", "node_info", "ping", "nope"})
WORKER_METHODS = sorted({"push_tasks", "tasks_done", "get_object", "add_borrower",
                         "remove_borrower", "lease_reclaim", "ping", "nope"})

leaves = (st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) | st.floats()
          | st.text(max_size=20) | st.binary(max_size=64))
values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)


def _messages(methods):
    request = st.tuples(st.just(rpc.REQUEST), st.integers(0, 2**32), st.sampled_from(methods),
                        st.lists(values, max_size=5)).map(list)
    oneway = st.tuples(st.just(rpc.ONEWAY), st.sampled_from(methods),
                       st.lists(values, max_size=5)).map(list)
    # replies nobody asked for, unknown kinds, and wrong shapes: out-of-order and malformed
    reply = st.tuples(st.sampled_from([rpc.REPLY_OK, rpc.REPLY_ERR]), st.integers(0, 2**32),
                      values).map(list)
    # well-formed lease requests with hostile amounts (negative, NaN, huge, wrong types)
    amounts = st.floats(allow_nan=True) | st.integers(-2**40, 2**40) | leaves
    lease = st.tuples(st.dictionaries(st.sampled_from(["CPU", "GPU", "x"]), amounts, max_size=3),
                      st.binary(max_size=4), st.booleans(), st.booleans()).map(
        lambda t: [rpc.REQUEST, 1, "request_lease", [*t, None]])
    odd = st.lists(values, max_size=5) | values
    return request | oneway | reply | lease | odd


def _payloads(methods):
    packed = st.lists(_messages(methods), min_size=1, max_size=4).map(
        lambda msgs: b"".join(msgpack.packb(m, use_bin_type=True) for m in msgs))
    truncated = st.tuples(packed, st.floats(0, 1)).map(lambda t: t[0][: int(len(t[0]) * t[1])])
    # a bin32 header announcing 2 GiB that never arrives (oversized frame)
    oversized = st.integers(2**28, 2**32 - 1).map(lambda n: b"\xc6" + struct.pack(">I", n))
    return packed | truncated | oversized | st.binary(max_size=512)


def _connect(address, authenticate: bool = True) -> socket.socket:
    """A connection to a Ray endpoint; with ``authenticate`` it has passed the cluster-secret
    handshake (so what follows reaches the protocol), else it is a raw socket."""
    if authenticate:
        sock = connect_socket(address, timeout_s=10.0)
    elif isinstance(address, str):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(address)
    else:
        sock = socket.create_connection(tuple(address), timeout=10.0)
    sock.settimeout(5.0)
    return sock


def _send_and_drain(sock: socket.socket, payload: bytes) -> None:
    """Send, half-close, and read whatever comes back until the server closes."""
    with contextlib.closing(sock):
        with contextlib.suppress(OSError):
            sock.sendall(payload)
            sock.shutdown(socket.SHUT_WR)
            while sock.recv(65536):
                pass
    MESSAGES_SENT["count"] += 1
    MESSAGES_SENT["bytes"] += len(payload)


@ray.remote
def _square(x):
    return x * x


@pytest.fixture(scope="module")
def node():
    ray.init(num_cpus=1, object_store_memory=96 * 1024**2)
    from ray._private import runtime

    info = ray.nodes()[0]
    core = runtime.current()
    raylet = next(p for p in psutil.Process().children()
                  if "raylet" in " ".join(p.cmdline()))
    yield {
        "raylet_tcp": (info["NodeManagerAddress"], info["NodeManagerPort"]),
        "raylet_unix": info["RayletSocketName"],
        "transfer": (info["NodeManagerAddress"], info["ObjectManagerPort"]),
        "plasma": info["ObjectStoreSocketName"],
        "worker": (core.address.ip, core.address.port),
        "raylet": raylet,
    }
    assert ray.get([_square.remote(i) for i in range(10)], timeout=60) \
        == [i * i for i in range(10)], "the node gives wrong answers after fuzzing"
    print(f"\nfuzz: {MESSAGES_SENT['count']} fuzzed connections ({MESSAGES_SENT['bytes']} "
          "bytes) in this module")
    ray.shutdown()


def _healthy(node) -> None:
    assert node["raylet"].is_running(), "the raylet died"
    with contextlib.closing(_connect(node["raylet_tcp"])) as sock:  # a well-behaved client
        sock.sendall(rpc.pack([rpc.REQUEST, 7, "ping", []]))
        unpacker = msgpack.Unpacker(raw=False)
        while True:
            unpacker.feed(sock.recv(65536))
            for msg in unpacker:
                assert msg == [rpc.REPLY_OK, 7, "pong"], msg
                return


@FUZZ_SETTINGS
@given(payload=_payloads(RAYLET_METHODS), unix=st.booleans())
def test_raylet_survives_fuzzed_messages_after_the_handshake(node, payload, unix):
    _send_and_drain(_connect(node["raylet_unix" if unix else "raylet_tcp"]), payload)
    _healthy(node)


@FUZZ_SETTINGS
@given(payload=_payloads(WORKER_METHODS))
def test_worker_rpc_server_survives_fuzzed_messages(node, payload):
    _send_and_drain(_connect(node["worker"]), payload)
    assert ray.get(_square.remote(3), timeout=30) == 9  # this very process still works


@FUZZ_SETTINGS
@given(payload=st.binary(max_size=64)
       | st.binary(min_size=PullRequest.SIZE, max_size=PullRequest.SIZE))
def test_object_transfer_server_survives_fuzzed_requests(node, payload):
    _send_and_drain(_connect(node["transfer"]), payload)
    _healthy(node)


def _plasma_frames():
    body = st.lists(values, max_size=6).map(lambda m: msgpack.packb(m, use_bin_type=True))
    framed = body.map(lambda b: struct.pack("<I", len(b)) + b)
    lying = st.tuples(st.integers(0, 2**32 - 1), st.binary(max_size=64)).map(
        lambda t: struct.pack("<I", t[0]) + t[1])  # length prefix that lies
    ops = st.tuples(st.integers(0, 14), st.integers(0, 2**32), st.lists(values, max_size=4)).map(
        lambda t: msgpack.packb([t[0], t[1], *t[2]], use_bin_type=True)).map(
        lambda b: struct.pack("<I", len(b)) + b)  # real op codes, garbage arguments
    return st.lists(framed | lying | ops, min_size=1, max_size=4).map(b"".join)


@FUZZ_SETTINGS
@given(payload=_plasma_frames())
def test_object_store_survives_fuzzed_frames(node, payload):
    _send_and_drain(_connect(node["plasma"], authenticate=False), payload)
    _healthy(node)
    ref = ray.put(b"x" * 200_000)  # other clients still read and write correctly
    assert ray.get(ref, timeout=30) == b"x" * 200_000


@FUZZ_SETTINGS
@given(answer=st.binary(max_size=80), target=st.sampled_from(["raylet_tcp", "raylet_unix",
                                                              "transfer", "worker"]))
def test_pre_auth_handshake_refuses_anything_but_the_right_answer(node, answer, target):
    """Whatever an unauthenticated client sends, it never gets a reply to a request."""
    sock = _connect(node[target], authenticate=False)
    with contextlib.closing(sock):
        greeting = b""
        while len(greeting) < auth.GREETING_BYTES:
            chunk = sock.recv(auth.GREETING_BYTES - len(greeting))
            assert chunk, "closed before the greeting"
            greeting += chunk
        assert greeting.startswith(auth.MAGIC)
        with contextlib.suppress(OSError):
            sock.sendall(answer + rpc.pack([rpc.REQUEST, 1, "ping", []]))
            sock.shutdown(socket.SHUT_WR)
        received = b""
        with contextlib.suppress(OSError):
            while chunk := sock.recv(65536):
                received += chunk
    MESSAGES_SENT["count"] += 1
    assert b"pong" not in received
    _healthy(node)


def _raw_call(address, method, *args):
    with contextlib.closing(_connect(address)) as sock:
        sock.sendall(rpc.pack([rpc.REQUEST, 1, method, list(args)]))
        unpacker = msgpack.Unpacker(raw=False)
        while True:
            data = sock.recv(65536)
            assert data, "the raylet closed the connection instead of answering"
            unpacker.feed(data)
            for msg in unpacker:
                return msg


@pytest.mark.parametrize("amount", [-5, float("nan"), float("inf"), "x", True])
def test_raylet_refuses_lease_shapes_that_would_corrupt_accounting(node, amount):
    """Found by fuzzing: {"CPU": -5} was granted, so the node offered 7 of its 2 CPUs."""
    reply = _raw_call(node["raylet_tcp"], "request_lease", {"CPU": amount}, b"\x01\x00\x00\x00",
                      False, False, None)
    assert reply[0] == rpc.REPLY_ERR and "bad resource request" in reply[2], reply
    assert ray.available_resources().get("CPU", 0) <= ray.cluster_resources()["CPU"]
    _healthy(node)


def test_a_worker_the_raylet_did_not_start_is_refused_with_a_reason(node):
    reply = _raw_call(node["raylet_tcp"], "register_worker", b"\x07" * 20, 4242,
                      [b"", "127.0.0.1", 1, b"\x07" * 20])
    assert reply[0] == rpc.REPLY_ERR and "was not started by this raylet" in reply[2], reply
    _healthy(node)


def test_an_owner_that_disconnects_while_its_lease_waits_for_a_worker_leaks_nothing(node):
    """Found by fuzzing: the raylet dropped such grants without releasing their CPU, so
    after enough of them no task could ever run on the node again."""
    for _ in range(20):
        with contextlib.closing(_connect(node["raylet_tcp"])) as sock:
            sock.sendall(rpc.pack([rpc.REQUEST, 1, "request_lease", [
                {"CPU": 1}, b"\x07\x00\x00\x00", False, False, None]]))
    _healthy(node)
    assert ray.get([_square.remote(i) for i in range(4)], timeout=60) == [0, 1, 4, 9]
