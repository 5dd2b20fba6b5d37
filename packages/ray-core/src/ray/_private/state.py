"""Global state for users: timeline, tasks, objects, errors (``ray.timeline`` etc.)."""

from __future__ import annotations

import json

import msgpack

from ray._private import runtime as _runtime
from ray._private.gcs import keys


def _events(rt) -> list:
    rt.flush_profile_events()
    out = []
    for raw in rt.gcs.sharded_lrange(keys.PROFILE_EVENTS):
        node_ip, worker_hex, events = msgpack.unpackb(raw, raw=False)
        for event_type, name, start, end, pid, extra in events:
            out.append({
                "event_type": event_type, "name": name, "start": start, "end": end,
                "node_ip": node_ip, "worker": worker_hex, "pid": pid, "extra": extra or {},
            })
    return out


def timeline(filename: str | None = None):
    """Every recorded span (task executions, ``ray.profile`` blocks) as Chrome-trace JSON."""
    rt = _runtime.current()
    trace = []
    for e in _events(rt):
        extra = dict(e["extra"])
        name = extra.pop("name", None) or e["name"]
        event = {
            "cat": e["event_type"],
            "name": name,
            "ph": "X",
            "ts": e["start"] * 1e6,
            "dur": max(0.0, (e["end"] - e["start"]) * 1e6),
            "pid": f"Node {e['node_ip']}",
            "tid": f"worker {e['pid']}",
            "args": extra,
        }
        if "cname" in extra:
            event["cname"] = extra.pop("cname")
        trace.append(event)
    trace.sort(key=lambda ev: ev["ts"])
    if filename is not None:
        with open(filename, "w") as f:
            json.dump(trace, f)
        return None
    return trace


def object_transfer_timeline(filename: str | None = None):
    events = [e for e in (timeline() or []) if e["cat"] == "transfer"]
    if filename is not None:
        with open(filename, "w") as f:
            json.dump(events, f)
        return None
    return events


def tasks(task_id: str | None = None):
    rt = _runtime.current()
    table = {}
    for e in _events(rt):
        if e["event_type"] != "task:execute":
            continue
        tid = (e["extra"] or {}).get("task_id", "")
        table[tid] = {"TaskID": tid, "FunctionName": e["name"], "StartTime": e["start"],
                      "EndTime": e["end"], "NodeIP": e["node_ip"], "WorkerPid": e["pid"]}
    return table.get(task_id) if task_id is not None else table


def objects(object_id: str | None = None):
    rt = _runtime.current()
    table = {}
    for oid, info in rt.refs.snapshot().items():
        entry = rt.memory_store.get(oid)
        size = len(entry.data) if hasattr(entry, "data") else getattr(entry, "size", None)
        table[oid.hex()] = dict(info, ObjectID=oid.hex(), DataSize=size,
                                Location="inline" if hasattr(entry, "data") else "store")
    return table.get(object_id) if object_id is not None else table


def errors(all_jobs: bool = False):
    rt = _runtime.current()
    return list(getattr(rt, "pushed_errors", []))


class profile:
    """``with ray.profile("event", extra_data={...}):`` adds a span to the timeline."""

    def __init__(self, event_type: str, extra_data: dict | None = None, worker=None):
        self.event_type = event_type
        self.extra = extra_data
        self._cm = None

    def __enter__(self):
        rt = _runtime.maybe_current()
        if rt is not None and hasattr(rt, "profile_span"):
            self._cm = rt.profile_span("custom", self.event_type, self.extra)
            self._cm.__enter__()
        return self

    def __exit__(self, *exc):
        if self._cm is not None:
            return self._cm.__exit__(*exc)
        return False
