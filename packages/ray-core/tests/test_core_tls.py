"""TLS on every TCP connection between Ray processes (RAY_USE_TLS, as Ray names it).

A 2-node cluster runs with TLS on (nodes on 127.0.0.1 and 127.0.0.2, so owners and
workers of different nodes talk over TCP, not Unix sockets): tasks, actors and object
transfers across the nodes work, and every TCP listener (raylet, object transfer, the
driver's and a worker's RPC port) speaks TLS only: a plain client is refused with an
error naming RAY_USE_TLS, a client whose certificate another CA signed is refused, and
garbage is dropped. A TLS client facing a plain server says so too; a misconfigured
RAY_USE_TLS fails at start-up naming the variable.
"""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import sys

import numpy as np
import pytest

import ray
from ray._private import auth, tls
from ray.cluster_utils import Cluster
from ray.exceptions import AuthenticationError

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None,
                                reason="needs the openssl command to make test certificates")


def _tls_env(monkeypatch, cert, key, ca):
    monkeypatch.setenv(tls.USE_ENV, "1")
    monkeypatch.setenv(tls.CERT_ENV, cert)
    monkeypatch.setenv(tls.KEY_ENV, key)
    monkeypatch.setenv(tls.CA_ENV, ca)


# -- the session over memory -------------------------------------------------------------------
def _pump(server, client, first_server: bytes, first_client: bytes):
    """Drive two sessions against each other until neither has anything to send."""
    to_client, to_server = first_server, first_client
    got_server, got_client = b"", b""
    for _ in range(20):
        if to_server:
            got_server += server.receive(to_server)
        if to_client:
            got_client += client.receive(to_client)
        to_client, to_server = server.outgoing(), client.outgoing()
        if not to_client and not to_server:
            break
    return got_server, got_client


def test_two_sessions_with_certificates_of_one_ca_talk(certs, monkeypatch):
    _tls_env(monkeypatch, *certs["node"])
    server = tls.TlsSession(True, "client")
    client = tls.TlsSession(False, "server")
    _pump(server, client, server.start(), client.start())
    assert server.established and client.established
    got_server, _ = _pump(server, client, b"", client.encrypt(b"hello " * 1000))
    assert got_server == b"hello " * 1000


def test_a_session_refuses_a_peer_whose_certificate_another_ca_signed(certs, monkeypatch):
    _tls_env(monkeypatch, *certs["node"])
    server = tls.TlsSession(True, "client")
    first_server = server.start()
    _tls_env(monkeypatch, *certs["rogue"])
    client = tls.TlsSession(False, "server")
    with pytest.raises((AuthenticationError, ConnectionError)):
        _pump(server, client, first_server, client.start())


@pytest.mark.parametrize("variable", [tls.CERT_ENV, tls.KEY_ENV, tls.CA_ENV])
def test_tls_on_without_a_file_is_an_error_naming_the_variable(certs, monkeypatch, variable):
    _tls_env(monkeypatch, *certs["node"])
    monkeypatch.delenv(variable)
    with pytest.raises(ValueError, match=variable):
        tls.check()
    monkeypatch.setenv(variable, "/nonexistent.pem")
    with pytest.raises(ValueError, match=variable):
        tls.check()
    monkeypatch.setenv(tls.USE_ENV, "maybe")
    with pytest.raises(ValueError, match=tls.USE_ENV):
        tls.check()


def test_ray_start_with_a_broken_tls_setup_fails_naming_it(certs, tmp_path):
    env = dict(os.environ, RAY_USE_TLS="1", RAY_TLS_SERVER_CERT=certs["node"][0],
               RAY_TLS_SERVER_KEY=certs["node"][1])
    env.pop(tls.CA_ENV, None)
    out = subprocess.run([sys.executable, "-m", "ray.scripts.cli", "start", "--head",
                          "--port", "0", "--temp-dir", str(tmp_path / "ray")],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode != 0
    assert tls.CA_ENV in out.stderr


# -- a 2-node cluster with TLS on ------------------------------------------------------------
@pytest.fixture
def tls_cluster(certs, monkeypatch):
    if not (shutil.which("redis-server") or shutil.which("valkey-server")):
        pytest.skip("the GCS runs TLS too, which needs a Redis built with it on PATH "
                    "(Debian's redis-server; ci/system_deps.sh installs it)")
    _tls_env(monkeypatch, *certs["node"])
    cluster = Cluster()
    cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1")
    cluster.add_node(num_cpus=1, resources={"far": 4}, node_ip_address="127.0.0.2")
    ray.init(address=cluster.address)
    yield cluster
    ray.shutdown()
    cluster.shutdown()


@ray.remote
def make_array(n):
    return np.arange(n, dtype=np.int64)


@ray.remote
def total(array):
    return int(array.sum())


@ray.remote(resources={"far": 1})
class FarActor:
    def __init__(self):
        self.items = []

    def add(self, x):
        self.items.append(x)
        return len(self.items)

    def address(self):
        from ray._private import runtime as rt

        address = rt.current().address
        return address.ip, address.port


def test_a_two_node_cluster_works_with_tls_on(tls_cluster):
    far = FarActor.remote()
    assert ray.get([far.add.remote(i) for i in range(20)], timeout=120)[-1] == 20
    # A big object made on the far node, read here; one made here, read there.
    there = make_array.options(resources={"far": 1}).remote(3_000_000)
    assert ray.get(total.remote(there), timeout=120) == sum(range(3_000_000))
    here = ray.put(np.ones(2_000_000, dtype=np.int64))
    assert ray.get(total.options(resources={"far": 1}).remote(here), timeout=120) == 2_000_000
    assert ray.get(there, timeout=120)[-1] == 2_999_999
    assert all(n["Alive"] for n in ray.nodes())


def _tcp_endpoints(far_actor):
    from ray._private import runtime as rt

    core = rt.current()
    endpoints = [("driver", (core.address.ip, core.address.port)),
                 ("far worker", tuple(ray.get(far_actor.address.remote(), timeout=60)))]
    for node in ray.nodes():
        host = node["NodeManagerAddress"]
        endpoints += [(f"raylet {host}", (host, node["NodeManagerPort"])),
                      (f"object transfer {host}", (host, node["ObjectManagerPort"]))]
    return endpoints


def test_every_tcp_listener_refuses_plain_and_foreign_clients(tls_cluster, certs):
    far = FarActor.remote()
    endpoints = _tcp_endpoints(far)
    key = auth.derive_key(tls_cluster.redis_password)
    for name, address in endpoints:
        # A plain client holding the right secret: told that TLS is required.
        with socket.create_connection(address, timeout=10) as plain:
            with pytest.raises(AuthenticationError, match="requires TLS"):
                auth.client_handshake(plain, name, key=key)
        # A client that ignores the marker and speaks the plain protocol: dropped.
        with socket.create_connection(address, timeout=10) as raw:
            assert raw.recv(len(tls.TLS_MARKER), socket.MSG_WAITALL) == tls.TLS_MARKER
            raw.sendall(os.urandom(48) + b"\x93\x00\x01\xa4ping\x90")
            raw.settimeout(10)
            try:
                assert raw.recv(1 << 16) == b"", name
            except ConnectionResetError:
                pass
        # Right protocol and secret, certificate from another CA: refused. (From another
        # process: this one's environment is also the driver's TLS setup.)
        for foreign in (certs["rogue"],  # it does not trust us either
                        certs["rogue"][:2] + certs["node"][2:]):  # it trusts our CA
            assert _foreign_client(address, tls_cluster.redis_password, foreign) \
                .startswith("AuthenticationError: TLS handshake"), name
        # The real thing gets through.
        with socket.create_connection(address, timeout=10) as good:
            secured = auth.connect(good, name, timeout_s=10, key=key)
            assert isinstance(secured, ssl.SSLSocket)
            secured.close()
    assert ray.get(far.add.remote(1), timeout=60) == 1  # the cluster carried on


def _foreign_client(address, secret, cert_key_ca) -> str:
    code = (
        "import socket, sys\n"
        "from ray._private import auth\n"
        "sock = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)\n"
        "try:\n"
        "    auth.connect(sock, 'endpoint', timeout_s=10, key=auth.derive_key(sys.argv[3]))\n"
        "    print('accepted')\n"
        "except Exception as exc:\n"
        "    print(f'{type(exc).__name__}: {exc}')\n")
    cert, key, ca = cert_key_ca
    env = dict(os.environ, RAY_USE_TLS="1", RAY_TLS_SERVER_CERT=cert, RAY_TLS_SERVER_KEY=key,
               RAY_TLS_CA_CERT=ca)
    out = subprocess.run([sys.executable, "-c", code, address[0], str(address[1]), secret],
                         capture_output=True, text=True, env=env, timeout=120)
    return out.stdout.strip() or out.stderr[-2000:]


def test_a_tls_client_facing_a_plain_server_says_so(certs, monkeypatch):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    try:
        gate = auth.ServerGate(auth.derive_key("s"))
        client = socket.create_connection(listener.getsockname(), timeout=10)
        server, _ = listener.accept()
        server.sendall(gate.greeting)  # a plain server greets first
        _tls_env(monkeypatch, *certs["node"])
        with pytest.raises(AuthenticationError, match="runs without TLS"):
            auth.connect(client, "plain server", timeout_s=10, key=auth.derive_key("s"))
        client.close()
        server.close()
    finally:
        listener.close()
