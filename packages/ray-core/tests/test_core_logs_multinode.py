"""Logs of every node, served by each node's raylet (``raylet/log_server.py``) and read
through ``ray.util.state.list_logs/get_log`` and ``ray logs``.

The multi-node test joins a second node with its own temp dir to a ``Cluster``; run as
root it starts that node in a private mount namespace whose temp dir is a tmpfs, so its
files are invisible to this process and can only come from its raylet."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import threading
import time

import pytest

import ray
from ray._private import aio
from ray._private.log_messages import FROM_TAIL, LogChunk, LogFileInfo, ReadLogRequest
from ray._private.log_reader import LogNotFound, NodeLogClient
from ray._private.messages import MalformedMessage
from ray._private.raylet.log_server import LogServer, read_chunk, tail_start
from ray.util import state

RAY = [sys.executable, "-m", "ray.scripts.cli"]


# -- pure: reading chunks -------------------------------------------------------------------
def test_tail_start_finds_the_last_lines():
    data = b"a\nbb\nccc\n"
    assert data[tail_start(data, 1):] == b"ccc\n"
    assert data[tail_start(data, 2):] == b"bb\nccc\n"
    assert data[tail_start(data, 9):] == data
    assert data[tail_start(data, 0):] == b""
    assert b"a\nbb"[tail_start(b"a\nbb", 1):] == b"bb"  # an unfinished last line counts


def test_read_chunk_by_offset_tail_and_after_truncation(tmp_path):
    path = tmp_path / "worker-x.out"
    path.write_bytes(b"".join(b"line %d\n" % i for i in range(100)))
    tail = read_chunk(str(path), ReadLogRequest("worker-x.out", FROM_TAIL, 2))
    assert tail.data == b"line 98\nline 99\n" and tail.end == tail.size_bytes
    whole = read_chunk(str(path), ReadLogRequest("worker-x.out", FROM_TAIL, -1))
    assert whole.start == 0 and whole.data.count(b"\n") == 100
    part = read_chunk(str(path), ReadLogRequest("worker-x.out", 7, max_bytes=7))
    assert (part.data, part.start, part.end) == (b"line 1\n", 7, 14)
    path.write_bytes(b"new\n")  # truncated below the reader's offset: start over
    again = read_chunk(str(path), ReadLogRequest("worker-x.out", 500))
    assert (again.data, again.start) == (b"new\n", 0)


def test_log_messages_round_trip_and_refuse_paths():
    request = ReadLogRequest("raylet.out", 10, 5, 1000, 2.5)
    back = ReadLogRequest.from_wire(request.to_wire())
    assert back.to_wire() == ["raylet.out", 10, 5, 1000, 2.5]
    assert LogChunk.from_wire(LogChunk(b"xy", 3, 9).to_wire()).end == 5
    assert LogFileInfo.from_wire(["a.out", 3]).size_bytes == 3
    for bad in ("../etc/passwd", ".secret", "logs/a.out", ""):
        with pytest.raises(ValueError, match="file name in the node's log directory"):
            ReadLogRequest(bad)
        with pytest.raises(MalformedMessage):
            ReadLogRequest.from_wire([bad, 0, -1, 10, 0.0])
    assert ReadLogRequest("a", max_bytes=10**12, wait_s=10**6).to_wire()[3:] == [4194304, 30.0]


# -- the service over a real connection (no raylet) -----------------------------------------
@pytest.fixture
def log_service(tmp_path):
    """A LogServer behind the raylet's protocol on 127.0.0.1, in a thread of its own."""
    from ray._private import auth

    old_secret = auth.cluster_secret()  # an earlier test's ray.init may have set one
    auth.set_cluster_secret(None)  # the server's: the clients below use None or a wrong one
    loop = asyncio.new_event_loop()
    started = threading.Event()
    holder = {}

    def serve():
        asyncio.set_event_loop(loop)
        handlers = LogServer(str(tmp_path), "node test (127.0.0.1)", loop).handlers()
        server = loop.run_until_complete(loop.create_server(
            lambda: aio.RpcProtocol(handlers, "test-logs", server=True), "127.0.0.1", 0))
        holder["port"] = server.sockets[0].getsockname()[1]
        started.set()
        loop.run_forever()
        server.close()
        loop.run_until_complete(server.wait_closed())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    started.wait(10)
    yield tmp_path, holder["port"]
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.close()
    auth.set_cluster_secret(old_secret)


def test_a_waiting_read_answers_when_bytes_are_appended(log_service):
    log_dir, port = log_service
    (log_dir / "worker-a.out").write_bytes(b"first\n")
    (log_dir / ".hidden").write_bytes(b"x")
    with NodeLogClient("ab" * 20, "127.0.0.1", port, None) as client:
        assert [(f.name, f.size_bytes) for f in client.list("*")] == [("worker-a.out", 6)]
        assert client.list("raylet*") == []
        start = client.read(ReadLogRequest("worker-a.out", FROM_TAIL, -1))
        assert start.data == b"first\n"
        threading.Timer(0.3, lambda: open(log_dir / "worker-a.out", "ab").write(b"more\n")).start()
        t0 = time.monotonic()
        chunk = client.read(ReadLogRequest("worker-a.out", start.end, wait_s=10))
        assert chunk.data == b"more\n" and time.monotonic() - t0 < 5
        t0 = time.monotonic()  # nothing appended: an empty chunk once the wait is over
        assert client.read(ReadLogRequest("worker-a.out", chunk.end, wait_s=0.3)).data == b""
        assert time.monotonic() - t0 >= 0.25
        with pytest.raises(LogNotFound, match="no log file 'nope.out' on node test"):
            client.read(ReadLogRequest("nope.out"))
    from ray.exceptions import AuthenticationError

    with pytest.raises(AuthenticationError):
        NodeLogClient("ab" * 20, "127.0.0.1", port, "not-the-secret")


# -- a second node whose files this process cannot see --------------------------------------
def _private_mounts() -> bool:
    return os.geteuid() == 0 and shutil.which("unshare") is not None \
        and shutil.which("nsenter") is not None


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory):
    from ray.cluster_utils import Cluster

    cluster = Cluster()
    cluster.add_node(num_cpus=1)
    node2_tmp = str(tmp_path_factory.mktemp("node2"))
    start = [*RAY, "start", f"--address={cluster.address}", "--num-cpus=1",
             '--resources={"node2": 2}', f"--temp-dir={node2_tmp}",
             "--node-ip-address=127.0.0.1"]
    private = _private_mounts()
    if private:  # its temp dir is a tmpfs seen only inside the node's mount namespace
        start = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                 f'mount -t tmpfs ray-node2 "{node2_tmp}" && exec "$@"', "sh", *start]
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    done = subprocess.run(start, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    cluster.connect()
    deadline = time.time() + 60
    while len([n for n in ray.nodes() if n["Alive"]]) < 2:
        assert time.time() < deadline, "the second node did not join"
        time.sleep(0.2)
    (node2,) = [n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("node2")]
    raylet_pid = _raylet_pid(cluster, node2)
    yield {"cluster": cluster, "node2": node2, "node2_tmp": node2_tmp, "private": private,
           "head": cluster.head_node.node_id}
    ray.shutdown()
    stop = [*RAY, "stop", f"--temp-dir={node2_tmp}"]
    if private:  # its pid files are in its namespace's tmpfs
        stop = ["nsenter", f"--mount=/proc/{raylet_pid}/ns/mnt", *stop]
    subprocess.run(stop, capture_output=True, timeout=60)
    cluster.shutdown()


def _raylet_pid(cluster, node_id: str) -> int:
    from ray._private.gcs import connect, keys

    gcs = connect(cluster.address, cluster.redis_password)
    try:
        return gcs.hget_obj(keys.NODES, node_id)["pid"]
    finally:
        gcs.close()


@ray.remote(num_cpus=0, resources={"node2": 1})
class Speaker:
    def say(self, text):
        print(text, flush=True)
        return os.getpid()


@ray.remote(num_cpus=0, resources={"node2": 1})
def shout(text):
    print(text, flush=True)
    return 1


def _text(**query) -> str:
    return "".join(state.get_log(**query))


def _until(fn, what, timeout_s=30):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            value = fn()
        except LogNotFound:  # e.g. the task's events are not flushed yet
            value = None
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_list_logs_of_each_node_come_from_its_own_raylet(two_nodes):
    if two_nodes["private"]:  # the node's files are not on this process's file system
        assert os.listdir(two_nodes["node2_tmp"]) == []
    node2, head = two_nodes["node2"], two_nodes["head"]
    groups = state.list_logs(node_id=node2)
    assert groups["raylet"] == [f"raylet-{node2[:8]}.out"]
    assert state.list_logs(node_id=head[:10])["raylet"] == [f"raylet-{head[:8]}.out"]
    assert state.list_logs()["raylet"] == [f"raylet-{head[:8]}.out"]  # the head by default
    assert state.list_logs(node_id=node2, glob_filter="raylet*") == {
        "raylet": [f"raylet-{node2[:8]}.out"]}
    with pytest.raises(LogNotFound, match="no single node has id"):
        state.list_logs(node_id="ffff")


def test_an_actor_task_and_pid_log_on_another_node_and_follow(two_nodes):
    speaker = Speaker.remote()
    pid = ray.get(speaker.say.remote("hello from node two"))
    actor_id = speaker._actor_id.hex()
    _until(lambda: "hello from node two" in _text(actor_id=actor_id), "the actor's output")
    assert "hello from node two" in _text(pid=pid, node_id=two_nodes["node2"])
    ref = shout.remote("a task on node two")
    ray.get(ref)
    _until(lambda: "a task on node two" in _text(task_id=ref.task_id().hex()), "task output")
    assert _text(actor_id=actor_id, tail=1).strip() == "hello from node two"
    got, t0 = [], time.monotonic()

    def follow():
        for chunk in state.get_log(actor_id=actor_id, follow=True, tail=0, _interval=0.5):
            got.append((time.monotonic() - t0, chunk))
            if "second line" in chunk:
                return

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    time.sleep(1.0)
    said_at = time.monotonic() - t0
    ray.get(speaker.say.remote("second line"))
    reader.join(30)
    assert got and "second line" in got[-1][1], got
    assert got[-1][0] - said_at < 10
    cli = subprocess.run([*RAY, "logs", "actor", "--id", actor_id, "--address",
                          two_nodes["cluster"].address], capture_output=True, text=True,
                         timeout=60)
    assert cli.returncode == 0 and "second line" in cli.stdout, cli.stdout + cli.stderr
    listed = subprocess.run([*RAY, "logs", "--node-id", two_nodes["node2"], "--address",
                             two_nodes["cluster"].address], capture_output=True, text=True,
                            timeout=60)
    assert f"raylet-{two_nodes['node2'][:8]}.out" in listed.stdout, listed.stderr
    ray.kill(speaker)
    # A dead actor's log is found through its creation task's record.
    _until(lambda: "second line" in _text(actor_id=actor_id), "the dead actor's log")
