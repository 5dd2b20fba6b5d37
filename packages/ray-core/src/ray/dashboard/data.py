"""What the dashboard shows, read from the GCS: plain JSON-ready dicts and lists.

``ClusterView`` holds the GCS client and the few things that outlive one
request: the log lines received over pub/sub (a bounded ring per worker) and
the last introspection answer (so a burst of page refreshes asks the workers
once).
"""

from __future__ import annotations

import collections
import logging
import os
import threading
import time

import psutil

from ray._private import chrome_trace, ids, node_stats, state, task_events
from ray._private.gcs import keys
from ray._private.messages import MalformedMessage, OwnerAddress
from ray._private.runtime import cluster_info
from ray.dashboard import metrics

logger = logging.getLogger(__name__)

LOG_LINES_PER_WORKER = 500
MAX_LOG_WORKERS = 200
FINISHED_TASKS_SHOWN = 200
# The newest profile batches of each shard the dashboard reads (<= 2000 events each),
# and the most events one /api/timeline answer carries: a busy cluster makes
# millions, and the page polls every 2 s.
TAIL_BATCHES = 5
TIMELINE_MAX_EVENTS = 5000
INTROSPECT_CACHE_S = 1.0
TASK_EVENTS_CHECK_S = 0.5  # how often the task list is checked for new events
TASK_ROWS_SHOWN = 200
OBJECT_ID_BYTES = 20
METRICS_WINDOW_S = 600


def jsonable(value):
    """msgpack'd GCS records -> JSON: bytes become hex, tuples lists, keys strings."""
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {str(jsonable(k)): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def _host_port(wire) -> str | None:
    """An actor record's owner or worker address as "host:port" (None: none recorded)."""
    if not wire:
        return None
    try:
        return OwnerAddress.from_wire(wire).host_port()
    except MalformedMessage as exc:
        logger.warning("actor record with a malformed address %r: %s", wire, exc)
        return None


class ClusterView:
    def __init__(self, gcs, session_dir: str | None = None):
        self.gcs = gcs
        self.session_dir = session_dir
        self._logs: collections.OrderedDict[tuple, collections.deque] = collections.OrderedDict()
        self._log_names: dict[tuple, str] = {}
        self._subscribed_jobs: set[str] = set()
        self._lock = threading.Lock()
        self._introspected = (0.0, [])
        self._task_table = task_events.TaskTable(gcs, check_period_s=TASK_EVENTS_CHECK_S)
        self._tasks_source: dict | None = None  # the merge the sorted list was made from
        self._tasks: list[task_events.TaskRecord] = []
        self._tasks_lock = threading.Lock()

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
                "stats": _sample_json(node_stats.latest(self.gcs, node["NodeID"])),
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
            # Addresses as "host:port" (the wire form, before jsonable hexes its bytes).
            where = {key: _host_port(entry.get(key)) for key in ("owner", "address")}
            entry = jsonable(entry)
            entry.pop("methods", None)
            entry["actor_id"] = actor_id
            entry.update({key: value for key, value in where.items() if value is not None})
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

    def tasks(self, limit: int = FINISHED_TASKS_SHOWN, include_finished: bool = True) -> dict:
        running = [
            dict(w["running"], pid=w["pid"], node_ip=w["node_ip"], actor_id=w.get("actor_id"))
            for w in self.workers() if w.get("running")
        ]
        if not include_finished:  # the overview page shows only what runs now
            return {"running": running, "finished": [], "finished_total_shown": 0}
        table = state.task_table(state.events_from_gcs(self.gcs, TAIL_BATCHES))
        finished = sorted(table.values(), key=lambda t: t["EndTime"], reverse=True)[:limit]
        return {"running": running, "finished": finished, "finished_total_shown": len(finished)}

    # -- task events (the tasks and metrics pages) ---------------------------------------------
    def task_records(self) -> list[task_events.TaskRecord]:
        """Every task the GCS holds events for, newest first (``TaskTable`` merges again
        only when the event list changed)."""
        tasks = self._task_table.tasks()
        with self._tasks_lock:
            if tasks is not self._tasks_source:
                self._tasks = sorted(tasks.values(), reverse=True,
                                     key=lambda r: r.creation_time_ms or r.start_time_ms or 0)
                self._tasks_source = tasks
            return self._tasks

    def task_page(self, state_filter: str = "", query: str = "",
                  limit: int = TASK_ROWS_SHOWN) -> dict:
        """The tasks page: counts by state, and the newest tasks matching the state and a
        search (a task id or its prefix, an object id -> the task that made it, or part
        of the function name)."""
        records = self.task_records()
        counts: dict[str, int] = {}
        for record in records:
            counts[record.state] = counts.get(record.state, 0) + 1
        query = query.strip().lower()
        object_of = None  # an object id (task id + 4-byte index) names the task that made it
        if len(query) == 2 * OBJECT_ID_BYTES and _is_hex(query):
            object_of = ids.task_id_of(bytes.fromhex(query)).hex()

        def matches(r: task_events.TaskRecord) -> bool:
            if state_filter and r.state != state_filter:
                return False
            if not query:
                return True
            return (r.task_id.startswith(query) or r.task_id == object_of
                    or query in (r.name or "").lower())

        matched = [r for r in records if matches(r)]
        exact = next((r for r in matched if r.task_id in (query, object_of)), None)
        return {"total": len(records), "counts": counts, "matched": len(matched),
                "rows": [_task_json(r) for r in matched[:limit]],
                "lookup": None if exact is None else dict(
                    _task_json(exact), events=exact.events, error_message=exact.error_message,
                    object_id=query if object_of else None)}

    def metrics(self, window_s: float = METRICS_WINDOW_S) -> dict:
        """Utilisation series per node, the completion-time histogram, the heat map."""
        samples_wanted = int(window_s / node_stats.SAMPLE_PERIOD_S) + 1
        nodes = []
        ips = {}
        for node in cluster_info.nodes(self.gcs):
            ips[node["NodeID"]] = node["NodeManagerAddress"]
            samples = node_stats.read_series(self.gcs, node["NodeID"], last=samples_wanted)
            nodes.append({"node_id": node["NodeID"], "node_ip": node["NodeManagerAddress"],
                          "alive": node["Alive"], "series": metrics.series(samples)})
        records = self.task_records()
        durations = [r.duration_s for r in records if r.duration_s is not None]
        now_ms = time.time() * 1000
        intervals = [(f"{ips.get(r.node_id, '?')} {r.node_id[:8]}", r.start_time_ms / 1000,
                      (r.end_time_ms or now_ms) / 1000)
                     for r in records if r.node_id and r.start_time_ms is not None]
        horizon = time.time() - window_s
        intervals = [i for i in intervals if i[2] >= horizon]
        return {"time": time.time(), "nodes": nodes,
                "histogram": metrics.completion_histogram(durations),
                "heat_map": metrics.heat_map(intervals), "tasks_total": len(records)}

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


def _sample_json(sample) -> dict | None:
    if sample is None:
        return None
    return {"time": sample.time, "cpu_percent": sample.cpu_percent,
            "cpus_busy": sample.num_cpus_busy, "mem_used_bytes": sample.mem_used_bytes,
            "mem_total_bytes": sample.mem_total_bytes,
            "store_used_bytes": sample.object_store_used_bytes,
            "store_capacity_bytes": sample.object_store_capacity_bytes}


def _is_hex(text: str) -> bool:
    try:
        bytes.fromhex(text)
    except ValueError:
        return False
    return True


def _task_json(record: task_events.TaskRecord) -> dict:
    return {"task_id": record.task_id, "name": record.name, "state": record.state,
            "type": record.type, "job_id": record.job_id, "actor_id": record.actor_id,
            "node_id": record.node_id, "worker_pid": record.worker_pid,
            "attempt_number": record.attempt_number, "error_type": record.error_type,
            "creation_time_ms": record.creation_time_ms, "start_time_ms": record.start_time_ms,
            "end_time_ms": record.end_time_ms, "duration_s": record.duration_s}


__all__ = ["ClusterView", "jsonable"]
