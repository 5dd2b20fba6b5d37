"""Profile events -> Chrome-trace JSON (chrome://tracing, Perfetto); pure functions.

Layout: one trace *process* per node (named ``Node <ip>``), one *thread* per
driver/worker process on it (named by role and OS pid). Each task contributes

* ``task:execute`` (and ``task:fetch_arguments`` when it had to fetch
  arguments) as complete ("X") slices on the worker that ran it;
* its scheduling phase, from submission (stamped by the owner into the task
  spec) to the start of execution, as an async slice on the row of the worker
  that ran it (async slices may overlap, queued tasks do);
* one flow arrow per data dependency, from the end of the producing task to
  the start of the consuming one (turn on "Flow events" in chrome://tracing).

Object transfers between nodes become a "send" slice on the source node, a
"receive" slice on the destination, and an arrow between them.
"""

from __future__ import annotations

_US = 1e6
_OBJECT_MANAGER_TID = 0


class _Rows:
    """Stable small integers for nodes (trace pids), plus the metadata naming them."""

    def __init__(self):
        self.nodes: dict[str, int] = {}
        self.meta: list[dict] = []
        self._threads: set = set()

    def node(self, ip: str) -> int:
        pid = self.nodes.get(ip)
        if pid is None:
            pid = self.nodes[ip] = len(self.nodes) + 1
            self.meta.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                              "args": {"name": f"Node {ip}"}})
        return pid

    def thread(self, ip: str, tid: int, label: str) -> tuple[int, int]:
        pid = self.node(ip)
        if (pid, tid) not in self._threads:
            self._threads.add((pid, tid))
            self.meta.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                              "args": {"name": label}})
        return pid, tid


def _worker_row(rows: _Rows, event: dict) -> tuple[int, int]:
    role = str(event.get("worker", "")).partition(":")[0] if ":" in str(event.get("worker")) \
        else "worker"
    return rows.thread(event["node_ip"], int(event["pid"]), f"{role} {event['pid']}")


def _slice(event: dict, pid: int, tid: int) -> dict:
    extra = dict(event["extra"])
    name = extra.pop("name", None) or event["name"]
    out = {
        "cat": event["event_type"], "name": name, "ph": "X",
        "ts": event["start"] * _US, "dur": max(0.0, (event["end"] - event["start"]) * _US),
        "pid": pid, "tid": tid, "args": extra,
    }
    if "cname" in extra:
        out["cname"] = extra.pop("cname")
    return out


def _flow(flow_id: int, cat: str, src: tuple, src_ts: float, dst: tuple, dst_ts: float):
    return [
        {"ph": "s", "id": flow_id, "cat": cat, "name": cat, "pid": src[0], "tid": src[1],
         "ts": src_ts},
        {"ph": "f", "bp": "e", "id": flow_id, "cat": cat, "name": cat, "pid": dst[0],
         "tid": dst[1], "ts": dst_ts},
    ]


def task_trace(events: list[dict]) -> list[dict]:
    """Tasks, custom ``ray.profile`` spans, scheduling phases and dependency arrows."""
    rows = _Rows()
    trace: list[dict] = []
    executed: dict[str, dict] = {}  # task id -> its (last) execution slice
    for event in events:
        kind = event["event_type"]
        if kind.startswith("transfer:"):
            continue
        pid, tid = _worker_row(rows, event)
        piece = _slice(event, pid, tid)
        trace.append(piece)
        if kind == "task:execute":
            executed[piece["args"].get("task_id", "")] = piece
    flow_id = 0
    for async_id, (task_id, run) in enumerate(executed.items(), start=1):
        args = run["args"]
        submitted = args.pop("submitted", None)
        deps = args.pop("deps", None)
        if submitted is not None:
            # Integer ids: Perfetto reads string ids as hex numbers, and task ids overflow them.
            common = {"cat": "task:scheduling", "name": f"schedule {run['name']}",
                      "id": async_id, "pid": run["pid"], "tid": run["tid"]}
            trace.append(dict(common, ph="b", ts=submitted * _US, args={"task_id": task_id}))
            trace.append(dict(common, ph="e", ts=max(submitted * _US, run["ts"])))
        for dep in deps or ():
            producer = executed.get(dep[:-8])  # object id = producing task id + 4-byte index
            if producer is None:
                continue
            flow_id += 1
            end = producer["ts"] + producer["dur"]
            trace.extend(_flow(flow_id, "dependency",
                               (producer["pid"], producer["tid"]), max(producer["ts"], end - 1),
                               (run["pid"], run["tid"]), run["ts"]))
    trace.sort(key=lambda ev: ev["ts"])
    return rows.meta + trace


def transfer_trace(events: list[dict]) -> list[dict]:
    """Object transfers: send/receive slices on both nodes joined by an arrow."""
    rows = _Rows()
    trace: list[dict] = []
    for flow_id, event in enumerate(
        (e for e in events if e["event_type"] == "transfer:receive"), start=1
    ):
        extra = event["extra"]
        dst = rows.thread(event["node_ip"], _OBJECT_MANAGER_TID, "object manager")
        src = rows.thread(extra.get("from_ip", "?"), _OBJECT_MANAGER_TID, "object manager")
        start, dur = event["start"] * _US, max(0.0, (event["end"] - event["start"]) * _US)
        args = {"object_id": extra.get("object_id"), "size_bytes": extra.get("size_bytes")}
        short = str(extra.get("object_id", ""))[:12]
        trace.append({"cat": "transfer", "name": f"send {short}", "ph": "X", "ts": start,
                      "dur": dur, "pid": src[0], "tid": src[1], "args": args})
        trace.append({"cat": "transfer", "name": f"receive {short}", "ph": "X", "ts": start,
                      "dur": dur, "pid": dst[0], "tid": dst[1], "args": args})
        trace.extend(_flow(flow_id, "transfer", src, start, dst, start + dur / 2))
    trace.sort(key=lambda ev: ev["ts"])
    return rows.meta + trace


__all__ = ["task_trace", "transfer_trace"]
