"""Reading the cluster's log files, on any node: by name, or the log of an actor, task,
worker pid or submitted job (``ray logs``, ``ray.util.state.get_log/list_logs``, the
dashboard's logs view).

Every process writes under its node's session directory (``<session>/logs``): the
raylet ``raylet-<node>.out``, each worker ``worker-<worker id[:12]>.out|.err``, Redis,
the dashboard, the autoscaler's monitor. Files are read through the log service of the
raylet of the node they are on (``raylet/log_server.py``, over its authenticated TCP
port), so a node on another machine is read like a local one and this module never
touches the file system. An actor's or task's node and worker come from the actor table
or the task events (a dead actor: its creation task's events), a pid's from a live
introspection; a submitted job's output is kept in the GCS (``job_manager.JobStore``).

``ClusterLogs(gcs, secret)`` is the entry point; ``secret`` is the cluster secret the
raylets check (the GCS password).
"""

from __future__ import annotations

import dataclasses
import re
import socket
import time
from collections.abc import Callable, Iterator

from ray._private import auth, rpc, state, task_events
from ray._private.gcs import keys
from ray._private.log_messages import (
    FROM_TAIL,
    MAX_WAIT_S,
    LogChunk,
    LogFileInfo,
    ReadLogRequest,
    check_log_name,
)
from ray._private.messages import OwnerAddress
from ray.exceptions import AuthenticationError, RayConnectionError

_ANSI = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]")
CONNECT_TIMEOUT_S = 10.0
# What a reply may take beyond the read's own wait.
RPC_MARGIN_S = 30.0


class LogNotFound(LookupError):
    """No log matches the query; the message says what was looked for and why."""


@dataclasses.dataclass(frozen=True)
class LogQuery:
    node_id: str | None = None
    node_ip: str | None = None
    filename: str | None = None
    actor_id: str | None = None
    task_id: str | None = None
    pid: int | None = None
    suffix: str = "out"
    submission_id: str | None = None
    attempt_number: int = 0
    tail_lines: int = -1  # -1: everything
    follow: bool = False
    interval_s: float = 0.5
    filter_ansi_code: bool = False

    def __post_init__(self):
        chosen = [n for n in ("filename", "actor_id", "task_id", "pid", "submission_id")
                  if getattr(self, n) is not None]
        if len(chosen) != 1:
            raise ValueError(
                "Name exactly one log: filename= (with node_id= or node_ip=), actor_id=, "
                f"task_id=, pid= (with the node) or submission_id=; got {chosen or 'none'}")
        if self.suffix not in ("out", "err"):
            raise ValueError(f"suffix is 'out' or 'err', got {self.suffix!r}")
        if self.filename is not None:
            check_log_name(self.filename)


@dataclasses.dataclass(frozen=True)
class LogLocation:
    """A log file on a node: what ``ClusterLogs.resolve`` answers."""

    node_id: str
    node_ip: str
    raylet_port: int
    filename: str


# -- talking to one raylet ----------------------------------------------------------------------
class NodeLogClient:
    """A blocking connection to one raylet's log service."""

    def __init__(self, node_id: str, ip: str, port: int, secret: str | None,
                 timeout_s: float = CONNECT_TIMEOUT_S):
        self.where = f"the raylet of node {node_id[:12]} ({ip}:{port})"
        try:
            self._sock = socket.create_connection((ip, int(port)), timeout=timeout_s)
        except OSError as exc:
            raise LogNotFound(f"cannot reach {self.where}: {exc} (is the node alive?)") from None
        try:
            self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._sock = auth.connect(self._sock, self.where, timeout_s,  # TLS when on
                                      key=auth.derive_key(secret))
        except (AuthenticationError, OSError):
            self._sock.close()
            raise
        self._peer = rpc.RpcPeer(self._sock.sendall, {}, name=self.where)

    def _call(self, timeout_s: float, method: str, *args):
        future = self._peer.call(method, *args)
        deadline = time.monotonic() + timeout_s
        while not future.done():
            left = deadline - time.monotonic()
            if left <= 0:
                self.close()
                raise LogNotFound(f"{self.where} did not answer {method} within {timeout_s} s")
            self._sock.settimeout(left)
            try:
                data = self._sock.recv(1 << 20)
            except TimeoutError:
                continue
            except OSError as exc:
                self._peer.connection_lost(str(exc))
                break
            if not data:
                self._peer.connection_lost("the connection was closed")
                break
            self._peer.feed(data)
        try:
            return future.result(0)
        except rpc.RemoteError as exc:
            raise LogNotFound(str(exc).split(": ", 1)[-1]) from None
        except RayConnectionError as exc:  # "<where>: <why>"
            raise LogNotFound(f"{exc} (did the node stop?)") from None

    def list(self, glob_filter: str = "*") -> list[LogFileInfo]:
        return [LogFileInfo.from_wire(w) for w in self._call(RPC_MARGIN_S, "list_logs",
                                                              glob_filter)]

    def read(self, request: ReadLogRequest) -> LogChunk:
        return LogChunk.from_wire(self._call(request.wait_s + RPC_MARGIN_S, "read_log",
                                             *request.to_wire()))

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> NodeLogClient:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()


# -- the cluster's logs ---------------------------------------------------------------------------
def _group(name: str) -> str:
    for prefix, group in (("raylet", "raylet"), ("redis", "gcs_server"), ("valkey", "gcs_server"),
                          ("dashboard", "dashboard"), ("monitor", "autoscaler"),
                          ("job-driver", "driver"), ("zygote", "internal")):
        if name.startswith(prefix):
            return group
    if name.startswith("worker-"):
        return "worker_out" if name.endswith(".out") else "worker_err"
    return "misc"


class ClusterLogs:
    """Lists, resolves and streams the cluster's logs (see the module docstring)."""

    def __init__(self, gcs, secret: str | None,
                 connect: Callable[..., NodeLogClient] = NodeLogClient):
        self.gcs = gcs
        self.secret = secret
        self._connect = connect

    # -- nodes ------------------------------------------------------------------------------
    def node(self, node_id: str | None = None, node_ip: str | None = None) -> dict:
        """The node a query names (by id prefix or IP); the head when it names none."""
        nodes = self.gcs.hgetall_obj(keys.NODES)
        if node_id:
            matches = [nid for nid in nodes if nid.startswith(node_id)]
            if len(matches) != 1:
                raise LogNotFound(f"no single node has id {node_id!r} (nodes: "
                                  f"{', '.join(n[:12] for n in nodes) or 'none'})")
            return dict(nodes[matches[0]], node_id=matches[0])
        alive = {nid: i for nid, i in nodes.items() if i.get("alive", True)}
        if node_ip:
            matches = [nid for nid, i in alive.items() if i["node_ip"] == node_ip]
            if not matches:
                raise LogNotFound(f"no live node has IP {node_ip}")
            heads = [m for m in matches if alive[m].get("is_head")]
            if len(matches) > 1 and not heads:
                raise LogNotFound(f"{len(matches)} live nodes have IP {node_ip} "
                                  f"({', '.join(m[:12] for m in matches)}): pass node_id=")
            chosen = (heads or matches)[0]  # several nodes on one machine: the head's
            return dict(alive[chosen], node_id=chosen)
        heads = [nid for nid, i in alive.items() if i.get("is_head")] or list(alive)
        if not heads:
            raise LogNotFound("the cluster has no live node")
        return dict(alive[heads[0]], node_id=heads[0])

    def _client(self, node: dict) -> NodeLogClient:
        where = _location(node, "")
        return self._connect(where.node_id, where.node_ip, where.raylet_port, self.secret)

    def list_logs(self, *, node_id=None, node_ip=None,
                  glob_filter: str = "*") -> dict[str, list[str]]:
        """The node's log files by group (Ray's groups: raylet, worker_out, ...)."""
        with self._client(self.node(node_id, node_ip)) as client:
            files = client.list(glob_filter)
        groups: dict[str, list[str]] = {}
        for info in files:
            groups.setdefault(_group(info.name), []).append(info.name)
        return groups

    def list_files(self, *, node_id=None, node_ip=None) -> list[LogFileInfo]:
        with self._client(self.node(node_id, node_ip)) as client:
            return client.list("*")

    # -- resolving a query to a file ---------------------------------------------------------
    def _worker_log(self, node_hex: str | None, worker_hex: str | None, suffix: str,
                    what: str) -> LogLocation:
        if not node_hex or not worker_hex:
            raise LogNotFound(f"{what} has not run on a worker yet")
        return _location(self.node(node_id=node_hex), f"worker-{worker_hex[:12]}.{suffix}")

    def resolve(self, query: LogQuery) -> LogLocation:
        """Where the log a query names lives (not for submission_id queries)."""
        if query.filename is not None:
            return _location(self.node(query.node_id, query.node_ip), query.filename)
        if query.actor_id is not None:
            entry = state.actors_from_gcs(self.gcs).get(query.actor_id)
            if entry is None:
                raise LogNotFound(f"no actor {query.actor_id}")
            if entry.get("address"):  # alive: the worker it runs in
                address = OwnerAddress.from_wire(entry["address"])
                return self._worker_log(entry.get("node_id"), address.worker_id.hex(),
                                        query.suffix, f"actor {query.actor_id}")
            # Not running now: the worker it last ran in (its creation task's record).
            record = task_events.read_tasks(self.gcs).get(query.actor_id)
            if record is None:
                raise LogNotFound(f"actor {query.actor_id} has no worker now (state "
                                  f"{entry.get('state')}) and no recorded one")
            return self._worker_log(record.node_id, record.worker_id, query.suffix,
                                    f"actor {query.actor_id}")
        if query.task_id is not None:
            record = task_events.read_tasks(self.gcs).get(query.task_id)
            if record is None:
                raise LogNotFound(f"task {query.task_id} is unknown (no task events: finished "
                                  "long ago, or run with enable_task_events=False)")
            return self._worker_log(record.node_id, record.worker_id, query.suffix,
                                    f"task {query.task_id}")
        node = self.node(query.node_id, query.node_ip)
        for report in state.introspect(self.gcs, timeout_s=1.0):
            if report["pid"] == query.pid and report["node_id"] == node["node_id"]:
                if report["mode"] == "driver":
                    raise LogNotFound(f"pid {query.pid} is a driver: its output is its own "
                                      "terminal")
                return self._worker_log(node["node_id"], report["worker_id"], query.suffix,
                                        f"pid {query.pid}")
        raise LogNotFound(f"no live worker has pid {query.pid} on node {node['node_id'][:12]}")

    # -- reading -----------------------------------------------------------------------------
    def stream(self, query: LogQuery, should_stop: Callable[[], bool] = lambda: False
               ) -> Iterator[bytes]:
        """The log's content (its last ``tail_lines`` lines), then, with ``follow``, what is
        appended, until ``should_stop()`` (or, for a job, until the job ends)."""
        clean = (lambda b: _ANSI.sub(b"", b)) if query.filter_ansi_code else (lambda b: b)
        if query.submission_id is not None:
            yield from (clean(c) for c in stream_job_log(self.gcs, query, should_stop))
            return
        where = self.resolve(query)
        with self._connect(where.node_id, where.node_ip, where.raylet_port,
                           self.secret) as client:
            chunk = client.read(ReadLogRequest(where.filename, FROM_TAIL, query.tail_lines))
            offset = chunk.end
            if chunk.data:
                yield clean(chunk.data)
            while chunk.end < chunk.size_bytes:  # the rest of a file bigger than one chunk
                chunk = client.read(ReadLogRequest(where.filename, offset))
                offset = chunk.end
                if chunk.data:
                    yield clean(chunk.data)
            # Following: each read waits on the raylet (up to interval_s) for new bytes.
            wait_s = min(max(query.interval_s, 0.05), MAX_WAIT_S)
            while query.follow and not should_stop():
                chunk = client.read(ReadLogRequest(where.filename, offset, wait_s=wait_s))
                offset = chunk.end
                if chunk.data:
                    yield clean(chunk.data)


def _location(node: dict, filename: str) -> LogLocation:
    if not node.get("alive", True):
        raise LogNotFound(f"node {node['node_id'][:12]} ({node['node_ip']}) is dead: no raylet "
                          "serves its logs now (they stay in its session directory on that "
                          "machine)")
    return LogLocation(node["node_id"], node["node_ip"], node["raylet_port"], filename)


def _tail(data: bytes, lines: int) -> bytes:
    if lines < 0:
        return data
    if lines == 0:
        return b""
    parts = data.split(b"\n")
    if parts and parts[-1] == b"":
        parts.pop()
        return b"\n".join(parts[-lines:]) + b"\n"
    return b"\n".join(parts[-lines:])


def stream_job_log(gcs, query: LogQuery, should_stop: Callable[[], bool] = lambda: False
                   ) -> Iterator[bytes]:
    """A submitted job's output (kept in the GCS, so no raylet is asked)."""
    from ray._private.job_manager import JobStore

    sid = query.submission_id
    if sid is None:
        raise ValueError("stream_job_log reads a submitted job's output: pass submission_id=")

    store = JobStore(gcs)
    if store.get(sid) is None:
        raise LogNotFound(f"no submitted job {sid}")
    data, seq = store.read_log(sid)
    data = _tail(data, query.tail_lines)
    if data:
        yield data
    while query.follow and not should_stop():
        info = store.get(sid)
        data, seq = store.read_log(sid, seq)
        if data:
            yield data
        if info is None or info.status.is_terminal():
            data, seq = store.read_log(sid, seq)  # written just before the end
            if data:
                yield data
            return
        time.sleep(query.interval_s)


__all__ = ["ClusterLogs", "LogLocation", "LogNotFound", "LogQuery", "NodeLogClient",
           "stream_job_log"]
