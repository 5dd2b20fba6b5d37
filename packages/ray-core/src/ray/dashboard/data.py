"""What the dashboard shows, read from the GCS: plain JSON-ready dicts and lists.

``ClusterView`` holds the GCS client and the few things that outlive one
request: the log lines received over pub/sub (a bounded ring per worker) and
the last introspection answer (so a burst of page refreshes asks the workers
once).
"""

from __future__ import annotations

import collections
import os
import threading
import time

import psutil

from ray._private import chrome_trace, state
from ray._private.gcs import keys
from ray._private.runtime import cluster_info

LOG_LINES_PER_WORKER = 500
MAX_LOG_WORKERS = 200
FINISHED_TASKS_SHOWN = 200
# The newest profile batches of each shard the dashboard reads (<= 2000 events each),
# and the most events one /api/timeline answer carries: a busy cluster makes
# millions, and the page polls every 2 s.
TAIL_BATCHES = 5
TIMELINE_MAX_EVENTS = 5000
INTROSPECT_CACHE_S = 1.0


def jsonable(value):
    """msgpack'd GCS records -> JSON: bytes become hex, tuples lists, keys strings."""
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {str(jsonable(k)): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


class ClusterView:
    def __init__(self, gcs, session_dir: str | None = None):
        self.gcs = gcs
        self.session_dir = session_dir
        self._logs: collections.OrderedDict[tuple, collections.deque] = collections.OrderedDict()
        self._log_names: dict[tuple, str] = {}
        self._subscribed_jobs: set[str] = set()
        self._lock = threading.Lock()
        self._introspected = (0.0, [])

    # -- nodes -------------------------------------------------------------------------------
    def nodes(self) -> list[dict]:
        loads = self.gcs.hgetall_obj(keys.NODE_LOADS)
        now = time.time()
        out = []
        for node in cluster_info.nodes(self.gcs):
            load = loads.get(node["NodeID"]) or {}
            total = dict(load.get("total") or node["Resources"])
            # No load report yet: nothing is in use. An empty report means all is in use.
            available = dict(load["available"]) if "available" in load else dict(total)
            out.append({
                "node_id": node["NodeID"], "node_ip": node["NodeManagerAddress"],
                "alive": node["Alive"], "is_head": bool(node.get("IsHead")),
                "raylet_port": node["NodeManagerPort"],
                "heartbeat_age_s": round(now - node["LastHeartbeat"], 3)
                if node["LastHeartbeat"] else None,
                "resources_total": total,
                "resources_available": available,
                "resources_used": {k: round(v - available.get(k, 0.0), 4)
                                   for k, v in total.items()},
                "pending_demand": jsonable(load.get("demand") or []),
            })
        return out

    @staticmethod
    def host() -> dict:
        """The machine the dashboard runs on (the head): CPU and memory use."""
        mem = psutil.virtual_memory()
        return {"hostname": os.uname().nodename, "cpu_percent": psutil.cpu_percent(None),
                "cpu_count": psutil.cpu_count(), "memory_total_bytes": mem.total,
                "memory_used_bytes": mem.total - mem.available, "load_avg": os.getloadavg()}

    # -- actors and tasks ----------------------------------------------------------------------
    def actors(self) -> list[dict]:
        rows = []
        for actor_id, entry in state.actors_from_gcs(self.gcs).items():
            entry = jsonable(entry)
            entry.pop("methods", None)
            entry["actor_id"] = actor_id
            owner = entry.get("owner")
            if isinstance(owner, list) and len(owner) >= 2:
                entry["owner"] = f"{owner[0]}:{owner[1]}"
            address = entry.get("address")
            if isinstance(address, list) and len(address) >= 2:
                entry["address"] = f"{address[0]}:{address[1]}"
            rows.append(entry)
        order = {"ALIVE": 0, "PENDING": 1, "RESTARTING": 2, "DEAD": 3}
        rows.sort(key=lambda a: (order.get(a.get("state"), 9), a.get("class_name") or ""))
        return rows

    def workers(self) -> list[dict]:
        """Every driver and worker's answer to an introspection request (cached ~1 s)."""
        stamp, replies = self._introspected
        if time.monotonic() - stamp > INTROSPECT_CACHE_S:
            replies = state.introspect(self.gcs, timeout_s=0.5)
            replies.sort(key=lambda r: (r["node_ip"], r["mode"] != "driver", r["pid"]))
            self._introspected = (time.monotonic(), replies)
        return replies

    def tasks(self, limit: int = FINISHED_TASKS_SHOWN) -> dict:
        running = [
            dict(w["running"], pid=w["pid"], node_ip=w["node_ip"], actor_id=w.get("actor_id"))
            for w in self.workers() if w.get("running")
        ]
        table = state.task_table(state.events_from_gcs(self.gcs, TAIL_BATCHES))
        finished = sorted(table.values(), key=lambda t: t["EndTime"], reverse=True)[:limit]
        return {"running": running, "finished": finished, "finished_total_shown": len(finished)}

    def errors(self) -> list[dict]:
        return jsonable(state.errors_from_gcs(self.gcs))

    def timeline(self, limit: int = TIMELINE_MAX_EVENTS) -> list[dict]:
        """Chrome-trace events of the newest ``limit`` profile events (by end time)."""
        events = state.events_from_gcs(self.gcs, TAIL_BATCHES)
        if len(events) > limit:
            events.sort(key=lambda e: e["end"])
            events = events[-limit:]
        return chrome_trace.task_trace(events)

    def memory(self) -> list[dict]:
        return state.memory_table(self.gcs, timeout_s=1.0)

    def jobs(self) -> list[dict]:
        return [jsonable(dict(info, job_id=job)) for job, info in
                sorted(state.jobs_from_gcs(self.gcs).items())]

    # -- logs --------------------------------------------------------------------------------
    def follow_logs(self) -> None:
        """Subscribe to the log stream of every job not followed yet."""
        for job in state.jobs_from_gcs(self.gcs):
            if job not in self._subscribed_jobs:
                self._subscribed_jobs.add(job)
                self.gcs.subscribe_obj(keys.channel_logs(job),
                                       lambda _ch, msg, job=job: self._on_logs(job, msg))

    def _on_logs(self, job: str, msg: dict) -> None:
        key = (msg.get("ip", "?"), int(msg.get("pid", 0)))
        with self._lock:
            ring = self._logs.get(key)
            if ring is None:
                ring = self._logs[key] = collections.deque(maxlen=LOG_LINES_PER_WORKER)
                while len(self._logs) > MAX_LOG_WORKERS:
                    old, _ = self._logs.popitem(last=False)
                    self._log_names.pop(old, None)
            self._log_names[key] = msg.get("name") or ""
            stamp = time.time()
            for is_err, line in msg.get("lines", ()):
                ring.append([stamp, "stderr" if is_err else "stdout", line])

    def logs(self) -> list[dict]:
        self.follow_logs()
        with self._lock:
            return [{"node_ip": ip, "pid": pid, "name": self._log_names.get((ip, pid), ""),
                     "lines": list(ring)} for (ip, pid), ring in self._logs.items()]

    def log_files(self) -> list[dict]:
        """Log files of the processes on the dashboard's own node."""
        if not self.session_dir:
            return []
        logs = os.path.join(self.session_dir, "logs")
        out = []
        for name in sorted(os.listdir(logs)):
            path = os.path.join(logs, name)
            if os.path.isfile(path):
                out.append({"name": name, "size_bytes": os.path.getsize(path)})
        return out

    def log_file(self, name: str, tail_bytes: int = 64 * 1024) -> str:
        if not self.session_dir:
            raise FileNotFoundError("this dashboard was started without a session directory")
        if os.path.basename(name) != name or name.startswith("."):
            raise ValueError(f"not a log file name: {name!r}")
        path = os.path.join(self.session_dir, "logs", name)
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - tail_bytes))
            return f.read().decode("utf-8", "replace")

    def summary(self) -> dict:
        nodes = self.nodes()
        actors = self.actors()
        return {
            "time": time.time(),
            "nodes_alive": sum(n["alive"] for n in nodes),
            "actors_alive": sum(a.get("state") == "ALIVE" for a in actors),
            "cluster_resources": cluster_info.cluster_resources(self.gcs),
            "available_resources": cluster_info.available_resources(self.gcs),
            "host": self.host(),
        }


__all__ = ["ClusterView", "jsonable"]
