import contextlib
import os
import socket
import subprocess
import sys
import threading

import pytest

import ray

SMALL_STORE = 256 * 1024**2


@pytest.fixture(scope="module")
def ray_module():
    """One 2-CPU cluster shared by the tests of a module."""
    info = ray.init(num_cpus=2, object_store_memory=SMALL_STORE, num_gpus=0)
    yield info
    ray.shutdown()


@pytest.fixture
def ray_start():
    """A fresh cluster per test; parametrize with indirect=True to pass init kwargs."""

    def start(**kwargs):
        kwargs.setdefault("object_store_memory", SMALL_STORE)
        kwargs.setdefault("num_cpus", 2)
        return ray.init(**kwargs)

    yield start
    ray.shutdown()



RAY_CLI = [sys.executable, "-m", "ray.scripts.cli"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ray_start_head(tmp_path_factory):
    """``ray_start_head(*flags, dashboard=False)`` runs a 2-CPU ``ray start --head`` on
    127.0.0.1 (with more ``flags``; the dashboard on a free port, or off) and returns
    ``{"gcs": "127.0.0.1:<port>", "temp_dir": ..., "url": <the dashboard's, if on>}``.
    Every head it started is stopped after the module."""
    env = dict(os.environ)
    env.pop("RAY_ADDRESS", None)  # the head this starts, not one the environment names
    temp_dirs = []

    def start(*flags: str, dashboard: bool = False) -> dict:
        temp_dir = str(tmp_path_factory.mktemp("ray"))
        port = free_port()
        dashboard_flags = (["--dashboard-port", str(free_port())] if dashboard
                           else ["--include-dashboard", "false"])
        out = subprocess.run(
            RAY_CLI + ["start", "--head", "--port", str(port), "--num-cpus", "2",
                       "--temp-dir", temp_dir, *dashboard_flags, "--node-ip-address",
                       "127.0.0.1", *flags],
            capture_output=True, text=True, timeout=120, env=env)
        assert out.returncode == 0, out.stdout + out.stderr
        temp_dirs.append(temp_dir)
        info = {"gcs": f"127.0.0.1:{port}", "temp_dir": temp_dir}
        urls = [line.split()[-1] for line in out.stdout.splitlines()
                if line.startswith("Dashboard:")]
        assert bool(urls) == dashboard, out.stdout
        if dashboard:
            info["url"] = urls[0]
        return info

    yield start
    for temp_dir in temp_dirs:
        subprocess.run(RAY_CLI + ["stop", "--temp-dir", temp_dir], capture_output=True,
                       timeout=60)


def cut_every_pubsub_connection(gcs_address: str) -> None:
    """CLIENT KILL every pub/sub connection of the GCS's Redis (a cut network)."""
    import redis

    from ray._private import auth

    host, _, port = gcs_address.rpartition(":")
    killer = redis.Redis(host=host, port=int(port),
                         password=auth.resolve_secret(gcs_address, None))
    try:
        killer.execute_command("CLIENT", "KILL", "TYPE", "pubsub")
    finally:
        killer.close()


@pytest.fixture
def deaf_subscriptions():
    """``with deaf_subscriptions(gcs, cut=None):`` nothing published inside the block
    reaches ``gcs``'s subscribers, as when a change is published while their pub/sub
    connection reconnects after a Redis restart. The client's listener thread is held
    in a callback, then ``cut()`` runs (default: CLIENT KILL of every pub/sub
    connection; or e.g. a Redis restart); leaving the block releases the listener,
    which reconnects and re-subscribes on its own."""

    @contextlib.contextmanager
    def deaf(gcs, cut=None):
        channel = "test:hold:" + os.urandom(4).hex()
        held, release = threading.Event(), threading.Event()

        def hold(_channel, _data):
            held.set()
            release.wait(60)

        # (Left subscribed afterwards: once released, the hold returns at once.)
        gcs.subscribe(channel, hold, confirm=True)
        try:
            gcs.publish(channel, b"hold")
            assert held.wait(10), "the GCS listener thread never took the hold message"
            (cut or (lambda: cut_every_pubsub_connection(gcs.address)))()
            yield
        finally:
            release.set()

    return deaf


# -- TLS certificates (openssl) -------------------------------------------------------------
def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _make_ca(folder, name):
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.crt", "-days", "2",
             "-subj", f"/CN={name}", cwd=folder)


def _make_cert(folder, ca, name):
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}",
             cwd=folder)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
             "-CAcreateserial", "-out", f"{name}.crt", "-days", "2", cwd=folder)
    return (os.path.join(folder, f"{name}.crt"), os.path.join(folder, f"{name}.key"),
            os.path.join(folder, f"{ca}.crt"))


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """A cluster CA with a node certificate, and a rogue CA with its own: (cert, key, ca)."""
    folder = str(tmp_path_factory.mktemp("tls"))
    _make_ca(folder, "cluster-ca")
    _make_ca(folder, "rogue-ca")
    return {"node": _make_cert(folder, "cluster-ca", "node"),
            "rogue": _make_cert(folder, "rogue-ca", "rogue")}
