"""Mutual authentication: each side of every internal connection proves that it holds the
cluster secret. A client with the wrong secret is refused by the server (see also
test_core_auth.py), and a server that does not hold it (an impostor listening at a
worker's or raylet's address, another cluster's process) is detected by the client,
which then sends it nothing: not over blocking sockets, not from the threaded event
loop, not from the raylet's asyncio connections, not from object-transfer pulls."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
import time

import pytest

import ray
from ray._private import auth, rpc
from ray._private.transport import EventLoop, connect_socket
from ray.exceptions import AuthenticationError

SECRET = "the-cluster-secret"
KEY = auth.derive_key(SECRET)


@pytest.fixture
def our_secret():
    """This process authenticates with SECRET for the test."""
    old = auth._state.copy()
    auth._state.update(secret=SECRET, key=KEY)
    yield
    auth._state.update(old)


# -- the state machines, pure ----------------------------------------------------------------
def _exchange(server_key: bytes, client_key: bytes, after: bytes = b"") -> bytes | None:
    gate = auth.ServerGate(server_key)
    client = auth.ClientHandshake("the test server", client_key)
    answer, rest = client.feed(gate.greeting)
    assert answer is not None and rest is None
    assert gate.feed(answer) == b""
    _, rest = client.feed(gate.welcome + after)
    return rest


def test_both_sides_accept_each_other_with_the_same_secret():
    assert _exchange(KEY, KEY) == b""
    assert _exchange(KEY, KEY, after=b"first reply") == b"first reply"


def test_the_server_refuses_a_client_with_another_secret():
    gate = auth.ServerGate(KEY)
    client = auth.ClientHandshake("s", auth.derive_key("another"))
    answer, _ = client.feed(gate.greeting)
    with pytest.raises(AuthenticationError, match="wrong cluster secret"):
        gate.feed(answer)


def test_the_client_detects_a_server_that_does_not_hold_the_secret():
    client = auth.ClientHandshake("the impostor", KEY)
    greeting = auth.MAGIC + os.urandom(auth.NONCE_BYTES)
    answer, _ = client.feed(greeting)
    impostor = auth.ServerGate(auth.derive_key("a guess"))
    impostor_welcome = auth.OK + auth.server_proof(auth.derive_key("a guess"),
                                                   greeting[len(auth.MAGIC):],
                                                   answer[:auth.NONCE_BYTES])
    with pytest.raises(AuthenticationError, match="could not prove"):
        client.feed(impostor_welcome)
    assert impostor.greeting  # (an impostor may well speak the protocol)


def test_a_client_answer_reflected_back_is_not_a_server_proof():
    """The two MACs carry different labels: echoing the client's MAC proves nothing."""
    client = auth.ClientHandshake("the reflector", KEY)
    answer, _ = client.feed(auth.MAGIC + os.urandom(auth.NONCE_BYTES))
    with pytest.raises(AuthenticationError, match="could not prove"):
        client.feed(auth.OK + answer[auth.NONCE_BYTES:])


def test_a_recorded_welcome_is_useless_against_a_fresh_client_nonce():
    gate = auth.ServerGate(KEY)
    first = auth.ClientHandshake("s", KEY)
    answer, _ = first.feed(gate.greeting)
    gate.feed(answer)
    recorded = gate.welcome
    second = auth.ClientHandshake("replayer", KEY)
    second.feed(gate.greeting)  # the same server nonce, replayed
    with pytest.raises(AuthenticationError, match="could not prove"):
        second.feed(recorded)


def test_the_welcome_is_judged_only_when_complete():
    client = auth.ClientHandshake("s", KEY)
    client.feed(auth.MAGIC + os.urandom(auth.NONCE_BYTES))
    assert client.feed(auth.OK + b"\0" * 10) == (None, None)  # no prefix oracle


# -- a fake server that does not know the secret --------------------------------------------
class Impostor:
    """Listens on TCP, plays the server side without the secret, records what it gets."""

    def __init__(self):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(4)
        self.address = self.listener.getsockname()
        self.received_after_welcome: list[bytes] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                nonce = os.urandom(auth.NONCE_BYTES)
                conn.sendall(auth.MAGIC + nonce)
                answer = b""
                with contextlib.suppress(OSError):
                    while len(answer) < auth.ANSWER_BYTES:
                        chunk = conn.recv(auth.ANSWER_BYTES - len(answer))
                        if not chunk:
                            break
                        answer += chunk
                time.sleep(0.3)  # the client's first request is written meanwhile
                # Its best try: a proof under the key of a guessed secret.
                conn.sendall(auth.OK + auth.server_proof(
                    auth.derive_key("guessed"), nonce, answer[:auth.NONCE_BYTES]))
                data = b""
                with contextlib.suppress(OSError):
                    while chunk := conn.recv(65536):
                        data += chunk
                self.received_after_welcome.append(data)

    def close(self):
        self.listener.close()
        self._thread.join(10)


@pytest.fixture
def impostor():
    server = Impostor()
    yield server
    server.close()


def test_blocking_clients_refuse_an_impostor(our_secret, impostor):
    with pytest.raises(AuthenticationError, match="could not prove"):
        connect_socket(impostor.address, timeout_s=5, retry=False)


def test_the_event_loop_client_sends_nothing_to_an_impostor(our_secret, impostor):
    loop = EventLoop(name="test-mutual")
    loop.start()
    try:
        sock = connect_socket(impostor.address, timeout_s=5, retry=False, handshake=False)
        conn = loop.add_connection(sock, lambda write: rpc.RpcPeer(write, {}, name="worker"),
                                   client_auth="worker 127.0.0.1")
        future = conn.peer.call("get_object", b"secret payload")  # held until proven
        with pytest.raises(ray.exceptions.RayConnectionError, match="could not prove"):
            future.result(timeout=10)
        assert conn.closed
    finally:
        loop.stop()
    deadline = time.monotonic() + 5
    while not impostor.received_after_welcome and time.monotonic() < deadline:
        time.sleep(0.05)
    assert impostor.received_after_welcome == [b""]  # the request never left


def test_the_raylets_asyncio_client_refuses_an_impostor(our_secret, impostor):
    from ray._private import aio

    async def run():
        await aio.open_connection(impostor.address, {}, "raylet-pg", timeout_s=10)

    with pytest.raises(AuthenticationError, match="could not prove"):
        asyncio.run(run())


def test_an_object_pull_refuses_an_impostor(our_secret, impostor):
    from ray._private.raylet import object_manager
    from ray._private.raylet.transfer_wire import PullRequest

    with pytest.raises(AuthenticationError, match="could not prove"):
        object_manager._request(impostor.address, PullRequest(b"\1" * 20))
    deadline = time.monotonic() + 5
    while not impostor.received_after_welcome and time.monotonic() < deadline:
        time.sleep(0.05)
    assert impostor.received_after_welcome == [b""]  # it never learnt which object


# -- a real cluster ----------------------------------------------------------------------------
def test_a_real_node_proves_itself_and_refuses_a_wrong_secret_both_ways():
    """Against a real raylet: the right secret gets a proof it can check; a client with a
    wrong one is refused; and our own client holding a wrong secret reports the raylet
    as refusing (it cannot check the proof of a secret it does not have)."""
    from ray.cluster_utils import Cluster

    cluster = Cluster()
    try:
        cluster.add_node(num_cpus=1)
        ray.init(address=cluster.address)
        node = ray.nodes()[0]
        address = (node["NodeManagerAddress"], node["NodeManagerPort"])
        good = socket.create_connection(address, timeout=5)
        try:
            auth.client_handshake(good, "raylet", key=auth.derive_key(cluster.redis_password))
            good.sendall(rpc.pack([rpc.REQUEST, 1, "ping", []]))
            assert b"pong" in good.recv(1024)
        finally:
            good.close()
        bad = socket.create_connection(address, timeout=5)
        try:
            with pytest.raises(AuthenticationError, match="refused this process's cluster secret"):
                auth.client_handshake(bad, "raylet", key=auth.derive_key("wrong"))
        finally:
            bad.close()
        assert ray.get(ray.remote(lambda: 3).remote(), timeout=60) == 3
    finally:
        ray.shutdown()
        cluster.shutdown()
