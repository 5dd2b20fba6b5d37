"""Security: the cluster secret guards Redis and every internal connection; a single-node
cluster listens on localhost only; the secret never shows on a command line."""

import os
import socket
import subprocess
import sys

import msgpack
import psutil
import pytest
import redis

import ray
from ray._private import auth
from ray._private import runtime as rt
from ray.cluster_utils import Cluster
from ray.exceptions import AuthenticationError


@pytest.fixture
def cluster():
    c = Cluster()
    c.add_node(num_cpus=1)
    ray.init(address=c.address)
    yield c
    c.shutdown()


def _endpoints():
    """(name, (host, port)) of the raylet, the object-transfer server and the driver."""
    core = rt.current()
    info = ray.nodes()[0]
    host = info["NodeManagerAddress"]
    return [
        ("raylet", (host, info["NodeManagerPort"])),
        ("object transfer", (host, info["ObjectManagerPort"])),
        ("driver", (core.address.ip, core.address.port)),
    ]


def _raw_rpc_frame() -> bytes:
    body = msgpack.packb([0, 1, "ping", []])
    return len(body).to_bytes(4, "little") + body


ATTACKS = ["no_handshake", "wrong_secret", "garbage"]


def test_unauthenticated_clients_are_refused_and_the_cluster_keeps_working(cluster):
    for attack in ATTACKS:
        _attack_every_endpoint(attack)

    @ray.remote
    def f(x):
        return x * 2

    assert ray.get([f.remote(i) for i in range(20)]) == [2 * i for i in range(20)]


def _attack_every_endpoint(attack):
    for name, address in _endpoints():
        sock = socket.create_connection(address, timeout=5)
        try:
            greeting = sock.recv(auth.GREETING_BYTES, socket.MSG_WAITALL)
            assert greeting.startswith(auth.MAGIC), name
            if attack == "no_handshake":  # speak the protocol without answering the challenge
                sock.sendall(_raw_rpc_frame() * 20)
            elif attack == "wrong_secret":
                sock.sendall(auth.answer(auth.derive_key("not-the-secret"),
                                         greeting[len(auth.MAGIC):]))
            else:
                sock.sendall(os.urandom(4096))
            sock.settimeout(5)
            # Refused: the server closes (or resets, having unread input) without a reply.
            try:
                assert sock.recv(1 << 16) == b"", name
            except ConnectionResetError:
                pass
        finally:
            sock.close()
        with pytest.raises(AuthenticationError, match="cluster secret"):
            s = socket.create_connection(address, timeout=5)
            try:
                auth.client_handshake(s, name, key=auth.derive_key("wrong"))
            finally:
                s.close()


def test_the_right_secret_is_accepted_at_every_endpoint(cluster):
    for name, address in _endpoints():
        s = socket.create_connection(address, timeout=5)
        try:
            auth.client_handshake(s, name, key=auth.derive_key(cluster.redis_password))
        finally:
            s.close()


def test_redis_requires_the_secret_and_wrong_secrets_get_a_clear_error(cluster):
    host, port = cluster.address.rsplit(":", 1)
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(host=host, port=int(port)).ping()
    assert redis.Redis(host=host, port=int(port), password=cluster.redis_password).ping()
    ray.shutdown()
    with pytest.raises(AuthenticationError, match="rejected the cluster secret"):
        ray.init(address=cluster.address, redis_password="wrong-secret")


def test_secret_is_never_on_a_command_line_and_single_node_listens_on_localhost():
    ray.init(num_cpus=1)
    try:
        secret = auth.cluster_secret()
        assert secret
        session = rt.current().node["session_dir"]
        ours = [p for p in psutil.Process().children(recursive=True)]
        assert ours
        ports = []
        for proc in ours:
            try:
                assert secret not in " ".join(proc.cmdline()), proc.cmdline()
                ports += [c.laddr for c in proc.net_connections(kind="inet")
                          if c.status == psutil.CONN_LISTEN]
            except psutil.NoSuchProcess:
                continue
        ports += [c.laddr for c in psutil.Process().net_connections(kind="inet")
                  if c.status == psutil.CONN_LISTEN]
        assert ports
        assert {addr.ip for addr in ports} == {"127.0.0.1"}, ports
        conf = [f for f in os.listdir(session) if f.endswith(".conf")]
        assert conf and all(os.stat(os.path.join(session, f)).st_mode & 0o077 == 0 for f in conf)
    finally:
        ray.shutdown()


def test_ray_start_prints_the_secret_and_joining_needs_it(tmp_path):
    env = dict(os.environ)
    env.pop("RAY_REDIS_PASSWORD", None)
    port = _free_port()
    cmd = [sys.executable, "-m", "ray.scripts.cli"]
    temp = str(tmp_path / "ray")
    out = subprocess.run(cmd + ["start", "--head", "--port", str(port), "--num-cpus", "1",
                                "--node-ip-address", "127.0.0.1", "--temp-dir", temp],
                         capture_output=True, text=True, env=env, timeout=120)
    try:
        assert out.returncode == 0, out.stderr
        line = next(x for x in out.stdout.splitlines() if "ray start --address" in x)
        secret = line.split("--redis-password='")[1].rstrip("'")
        address = f"127.0.0.1:{port}"
        assert auth.load_secret(address) == secret  # found by drivers on this machine
        # A node on another machine without the secret is refused with a clear message.
        bad = subprocess.run(cmd + ["start", "--address", address, "--num-cpus", "1",
                                    "--redis-password", "wrong", "--temp-dir", temp],
                             capture_output=True, text=True, env=env, timeout=120)
        assert bad.returncode != 0
        assert "cluster secret" in bad.stderr
        # With it, a driver connects and runs work.
        probe = (f"import ray; ray.init(address={address!r}, redis_password={secret!r}); "
                 "print(ray.get(ray.remote(lambda: 7).remote()))")
        got = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                             env=env, timeout=120)
        assert got.stdout.strip().endswith("7"), got.stderr
    finally:
        subprocess.run(cmd + ["stop", "--temp-dir", temp], env=env, timeout=120,
                       capture_output=True)
    assert auth.load_secret(f"127.0.0.1:{port}") is None  # ray stop forgot it


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_client_handshake_never_blocks_the_caller_and_keeps_message_order():
    """A peer slow to answer the challenge (a worker importing torch with the GIL held)
    must not stall the caller: writes wait, in order, until the handshake is done."""
    import threading
    import time

    from ray._private.rpc import RpcPeer
    from ray._private.transport import EventLoop, connect_socket

    key = auth.derive_key("slow-peer-secret")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    received = []

    def slow_server(delay_s):
        conn, _ = listener.accept()
        with conn:
            time.sleep(delay_s)  # busy: the greeting comes late
            gate = auth.ServerGate(key)
            conn.sendall(gate.greeting)
            rest = None
            while rest is None:
                rest = gate.feed(conn.recv(64))
            conn.sendall(gate.welcome)
            unpacker = msgpack.Unpacker(raw=False)
            unpacker.feed(rest)
            conn.settimeout(5)
            messages = []
            while True:
                messages.extend(unpacker)
                if len(messages) >= 3:
                    break
                chunk = conn.recv(4096)
                if not chunk:
                    break
                unpacker.feed(chunk)
            received.append(messages)

    server = threading.Thread(target=slow_server, args=(1.0,))
    server.start()
    loop = EventLoop(name="test-io")
    loop.start()
    old = auth._state.copy()
    auth._state.update(secret="slow-peer-secret", key=key)
    try:
        sock = connect_socket(listener.getsockname(), timeout_s=5, handshake=False)
        conn = loop.add_connection(sock, lambda write: RpcPeer(write, {}, name="slow"),
                                   client_auth="slow test server")
        t0 = time.monotonic()
        for i in range(3):
            conn.peer.notify("m", i)
        assert time.monotonic() - t0 < 0.2  # nothing waited for the slow server
        server.join(10)
        assert [m[2][0] for m in received[0]] == [0, 1, 2], received
    finally:
        auth._state.update(old)
        loop.stop()
        listener.close()
