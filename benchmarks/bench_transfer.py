"""Node-to-node object movement: one large object read on another node, and the same
object read on 8 other nodes at once (a broadcast), beside the physical floor.

Real raylets on this machine (ray.cluster_utils.Cluster) move the object over TCP on
loopback through their object managers. The floor, measured in the same run: the same
number of bytes sent between two processes over a loopback TCP socket as fast as the
kernel allows (``sendfile`` from a /dev/shm file into ``recv_into`` of pre-faulted
memory), and a plain memcpy. Public API only (runs against Ray too). Prints JSON.

    python benchmarks/bench_transfer.py [--size BYTES] [--nodes N] [--repeat K]
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import socket
import statistics
import tempfile
import time

import numpy as np

import ray
from ray.cluster_utils import Cluster


def floor_tcp_gb_per_s(size: int) -> float:
    """Loopback TCP between two processes: sendfile from shared memory, recv_into
    pre-faulted memory (what a transfer cannot beat on this machine)."""
    fd, path = tempfile.mkstemp(dir="/dev/shm", prefix="bench-transfer-")
    os.unlink(path)
    os.ftruncate(fd, size)
    with mmap.mmap(fd, size) as src:
        np.frombuffer(src, dtype=np.uint8)[:] = 1
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    pid = os.fork()
    if pid == 0:  # the sender
        try:
            conn, _ = listener.accept()
            conn.recv(1)
            offset = 0
            while offset < size:
                offset += os.sendfile(conn.fileno(), fd, offset, size - offset)
            conn.recv(1)
        finally:
            os._exit(0)
    listener.close()
    os.close(fd)
    dst = mmap.mmap(-1, size)
    view = memoryview(dst)
    np.frombuffer(dst, dtype=np.uint8)[::mmap.PAGESIZE] = 0  # pre-fault
    sock = socket.create_connection(("127.0.0.1", port))
    start = time.perf_counter()
    sock.sendall(b"g")
    pos = 0
    while pos < size:
        pos += sock.recv_into(view[pos:], min(size - pos, 4 << 20), socket.MSG_WAITALL)
    seconds = time.perf_counter() - start
    sock.sendall(b"k")
    sock.close()
    os.waitpid(pid, 0)
    del view
    dst.close()
    return size / seconds / 1e9


def memcpy_gb_per_s(size: int) -> float:
    a = np.ones(size, dtype=np.uint8)
    b = np.empty(size, dtype=np.uint8)
    b.fill(0)  # faulted in (np.zeros would map zero pages lazily)
    start = time.perf_counter()
    b[:] = a
    return size / (time.perf_counter() - start) / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10**9)
    parser.add_argument("--nodes", type=int, default=8, help="readers in the broadcast")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    size = args.size
    store = int(size * 1.3)
    cluster = Cluster()
    cluster.add_node(num_cpus=1, object_store_memory=store, resources={"holder": 1})
    for i in range(args.nodes):
        cluster.add_node(num_cpus=1, object_store_memory=store, resources={f"r{i}": 1})
    ray.init(address=cluster.address)
    try:
        cluster.wait_for_nodes()

        @ray.remote(resources={"holder": 1})
        def make(n, seed):
            return np.full(n, seed % 251, dtype=np.uint8)

        @ray.remote(num_cpus=0)
        def touch(a):
            return int(a[-1]) + int(a[len(a) // 2])

        def readers(count: int):
            return [touch.options(resources={f"r{i}": 1}) for i in range(count)]

        # Warm up: every reader's worker started and the holder's object made once.
        ray.get([r.remote(make.remote(1000, 0)) for r in readers(args.nodes)])
        single, broadcast = [], []
        for k in range(args.repeat):
            ref = make.remote(size, k + 1)
            ray.wait([ref], fetch_local=False)
            start = time.perf_counter()
            assert ray.get(readers(1)[0].remote(ref)) == 2 * ((k + 1) % 251)
            single.append(time.perf_counter() - start)
            del ref
            ref = make.remote(size, k + 101)
            ray.wait([ref], fetch_local=False)
            start = time.perf_counter()
            got = ray.get([r.remote(ref) for r in readers(args.nodes)])
            broadcast.append(time.perf_counter() - start)
            assert got == [2 * ((k + 101) % 251)] * args.nodes
            del ref
    finally:
        ray.shutdown()
        cluster.shutdown()
    floor = statistics.median(floor_tcp_gb_per_s(size) for _ in range(args.repeat))
    single_s, broadcast_s = statistics.median(single), statistics.median(broadcast)
    print(json.dumps({
        "ray_version": ray.__version__,
        "bytes": size,
        "broadcast_nodes": args.nodes,
        "single_s": single,
        "broadcast_s": broadcast,
        "single_gb_per_s": size / single_s / 1e9,
        "broadcast_over_single": broadcast_s / single_s,
        "floor_tcp_loopback_gb_per_s": floor,
        "floor_memcpy_gb_per_s": memcpy_gb_per_s(size),
        "single_over_floor": size / single_s / 1e9 / floor,
    }, indent=2))


if __name__ == "__main__":
    main()
