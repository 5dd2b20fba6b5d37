"""Where the state API's rows come from: the GCS tables, task events and live replies.

``GcsStateSource(gcs)`` answers ``list``/``summarize`` for every resource. The
``ray.util.state`` functions use it directly when they can reach the GCS (a connected
driver or worker, or an address like ``auto`` / ``host:port``), and the dashboard serves
the same answers under ``/api/v0/`` for ``http://`` addresses.

| resource          | read from                                                        |
|-------------------|------------------------------------------------------------------|
| actors            | the actor table (``ray:actors``); pids from a live introspection |
| tasks             | task events (``ray._private.task_events``)                       |
| nodes             | the node table and heartbeats                                    |
| jobs              | the driver table (``ray:jobs``) and submitted jobs (job manager) |
| placement_groups  | the placement-group table                                        |
| workers, objects  | a live introspection of every driver and worker                  |
"""

from __future__ import annotations

import collections
import time

from ray._private import ids, state, task_events
from ray._private.gcs import keys
from ray._private.runtime import cluster_info
from ray.util.state.common import (
    RESOURCE_SCHEMAS,
    ListOptions,
    ListResult,
    StateResource,
    SummaryResource,
)

INTROSPECT_TIMEOUT_S = 1.0
_ACTOR_STATES = {"PENDING": "PENDING_CREATION"}


def _hex(value) -> str | None:
    return value.hex() if isinstance(value, bytes) else value


class GcsStateSource:
    def __init__(self, gcs):
        self.gcs = gcs
        self.task_table = task_events.TaskTable(gcs)

    # -- list --------------------------------------------------------------------------------
    def list(self, resource: StateResource, options: ListOptions) -> ListResult:
        schema = RESOURCE_SCHEMAS[resource]
        _check_filter_keys(resource, options.filters)
        rows = getattr(self, f"_{resource.value}")(options)
        total = len(rows)
        matched = [row for row in rows if _matches(row, options.filters)]
        kept = matched[: options.limit]
        if resource is StateResource.ACTORS and kept:
            self._fill_actor_pids(kept)
        if resource is StateResource.TASKS and options.detail:
            for row in kept:  # built for the rows returned only: one dict per transition
                row["events"] = row["_record"].events
        columns = schema.list_columns(detail=options.detail)
        result = [{c: row.get(c) for c in columns} for row in kept]
        warnings = []
        if len(matched) > options.limit:
            warnings.append(f"{len(matched)} {resource.value} match; the first "
                            f"{options.limit} are returned (raise limit= / --limit).")
        return ListResult(result=result, total=total, num_after_truncation=total,
                          num_filtered=len(matched), warnings=warnings)

    def _actors(self, options) -> list[dict]:
        rows = []
        for actor_id, entry in state.actors_from_gcs(self.gcs).items():
            death = entry.get("death_cause")
            rows.append({
                "actor_id": actor_id,
                "class_name": entry.get("class_name", ""),
                "state": _ACTOR_STATES.get(entry.get("state"), entry.get("state")),
                "job_id": entry.get("job_id", ""),
                "name": entry.get("name") or "",
                "node_id": _hex(entry.get("node_id")),
                "pid": None,
                "ray_namespace": entry.get("namespace"),
                "required_resources": None,
                "death_cause": {"message": death} if death else None,
                "is_detached": bool(entry.get("detached")),
                "placement_group_id": None,
                "repr_name": "",
                "num_restarts": entry.get("num_restarts", 0),
                "_worker_id": _hex((entry.get("address") or [None] * 4)[3]),
                "_start": entry.get("start_time") or 0,
            })
        rows.sort(key=lambda r: r["_start"])
        return rows

    def _tasks(self, options) -> list[dict]:
        records = self.task_table.tasks()
        rows = [_task_row(r) for r in records.values()]
        rows.sort(key=lambda r: r["creation_time_ms"] or r["start_time_ms"] or 0, reverse=True)
        return rows

    def _nodes(self, options) -> list[dict]:
        infos = self.gcs.hgetall_obj(keys.NODES)
        rows = []
        for node in cluster_info.nodes(self.gcs):
            info = infos.get(node["NodeID"], {})
            start = info.get("start_time")
            rows.append({
                "node_id": node["NodeID"], "node_ip": node["NodeManagerAddress"],
                "is_head_node": bool(node["IsHead"]),
                "state": "ALIVE" if node["Alive"] else "DEAD",
                "state_message": None if node["Alive"] else "heartbeats stopped or node stopped",
                "node_name": node["NodeManagerHostname"],
                "resources_total": node["Resources"], "labels": {},
                "start_time_ms": int(start * 1000) if start else None,
                "end_time_ms": None if node["Alive"] else int(node["LastHeartbeat"] * 1000),
            })
        return rows

    def _jobs(self, options) -> list[dict]:
        from ray._private import job_manager

        return job_manager.job_rows(self.gcs)

    def _placement_groups(self, options) -> list[dict]:
        rows = []
        for pg_id, record in sorted(self.gcs.hgetall_obj(keys.PLACEMENT_GROUPS).items(),
                                    key=lambda kv: kv[1].get("created_at") or 0):
            bundles = [{"bundle_id": {"placement_group_id": pg_id, "bundle_index": i},
                        "unit_resources": dict(b), "node_id": _hex(node)}
                       for i, (b, node) in enumerate(zip(record.get("bundles") or [],
                                                         record.get("bundle_nodes") or []))]
            created, scheduled = record.get("created_at"), record.get("scheduled_at")
            rows.append({
                "placement_group_id": pg_id, "name": record.get("name") or "",
                "creator_job_id": record.get("job_id", ""), "state": record.get("state"),
                "bundles": bundles, "is_detached": bool(record.get("detached")),
                "stats": {"scheduling_state": record.get("state"),
                          "end_to_end_creation_latency_ms":
                          round((scheduled - created) * 1000, 3) if created and scheduled
                          else None,
                          "strategy": record.get("strategy")},
            })
        return rows

    def _workers(self, options) -> list[dict]:
        rows = []
        for report in self._introspect():
            running = report.get("running") or {}
            rows.append({
                "worker_id": report["worker_id"], "is_alive": True,
                "worker_type": "DRIVER" if report["mode"] == "driver" else "WORKER",
                "exit_type": None, "node_id": report["node_id"], "ip": report["node_ip"],
                "pid": report["pid"], "exit_detail": None, "job_id": report["job_id"],
                "actor_id": report.get("actor_id"), "running_task_id": running.get("task_id"),
            })
        return rows

    def _objects(self, options) -> list[dict]:
        statuses = {}
        rows = []
        for ref in state.memory_table(self.gcs, timeout_s=INTROSPECT_TIMEOUT_S):
            if ref.get("object_id") is None:
                continue
            rows.append({
                "object_id": ref["object_id"], "object_size": ref["size_bytes"],
                "task_status": "NIL", "attempt_number": 0,
                "reference_type": ref["reference_type"], "call_site": "disabled",
                "type": ref["mode"].upper(), "pid": ref["pid"], "ip": ref["node_ip"],
            })
        if rows:  # the creating task's state, from task events
            tasks = self.task_table.tasks()
            for row in rows:
                task = statuses.get(row["object_id"])
                if task is None:
                    record = tasks.get(ids.task_id_of(bytes.fromhex(row["object_id"])).hex())
                    task = statuses[row["object_id"]] = record
                if task is not None:
                    row["task_status"], row["attempt_number"] = task.state, task.attempt_number
        return rows

    def _introspect(self) -> list[dict]:
        replies = state.introspect(self.gcs, timeout_s=INTROSPECT_TIMEOUT_S)
        replies.sort(key=lambda r: (r["node_ip"], r["mode"] != "driver", r["pid"]))
        return replies

    def _fill_actor_pids(self, rows) -> None:
        if not any(r["state"] == "ALIVE" for r in rows):
            return
        pids = {r["worker_id"]: r["pid"] for r in self._introspect()}
        for row in rows:
            if row["state"] == "ALIVE":
                row["pid"] = pids.get(row.get("_worker_id"))

    # -- summaries ------------------------------------------------------------------------------
    def summarize(self, resource: SummaryResource) -> dict:
        return getattr(self, f"_summarize_{resource.value}")()

    def _summarize_tasks(self) -> dict:
        summary: dict[str, dict] = {}
        totals = collections.Counter()
        for record in self.task_table.tasks().values():
            key = record.func_or_class_name or record.name
            entry = summary.setdefault(key, {"func_or_class_name": key, "type": record.type,
                                             "state_counts": {}})
            entry["state_counts"][record.state] = entry["state_counts"].get(record.state, 0) + 1
            totals[record.type] += 1
        return {"cluster": {
            "summary": summary, "total_tasks": totals["NORMAL_TASK"],
            "total_actor_tasks": totals["ACTOR_TASK"],
            "total_actor_scheduled": totals["ACTOR_CREATION_TASK"], "summary_by": "func_name",
        }}

    def _summarize_actors(self) -> dict:
        summary: dict[str, dict] = {}
        rows = self._actors(None)
        for row in rows:
            entry = summary.setdefault(row["class_name"], {"class_name": row["class_name"],
                                                           "state_counts": {}})
            entry["state_counts"][row["state"]] = entry["state_counts"].get(row["state"], 0) + 1
        return {"cluster": {"summary": summary, "total_actors": len(rows), "summary_by": "class"}}

    def _summarize_objects(self) -> dict:
        rows = self._objects(None)
        per = {"total_objects": 0, "total_size_mb": 0.0, "total_num_workers": 0,
               "total_num_nodes": 0, "task_state_counts": {}, "ref_type_counts": {}}
        workers, nodes = set(), set()
        for row in rows:
            per["total_objects"] += 1
            per["total_size_mb"] += (row["object_size"] or 0) / 1024**2
            workers.add((row["ip"], row["pid"]))
            nodes.add(row["ip"])
            for field, value in (("task_state_counts", row["task_status"]),
                                 ("ref_type_counts", row["reference_type"])):
                per[field][value] = per[field].get(value, 0) + 1
        per["total_num_workers"], per["total_num_nodes"] = len(workers), len(nodes)
        summary = {"disabled": per} if rows else {}
        return {"cluster": {"summary": summary, "total_objects": per["total_objects"],
                            "total_size_mb": per["total_size_mb"], "callsite_enabled": False,
                            "summary_by": "callsite"}}


def _task_row(record: task_events.TaskRecord) -> dict:
    row = {
        "task_id": record.task_id, "attempt_number": record.attempt_number,
        "name": record.name, "state": record.state, "job_id": record.job_id,
        "actor_id": record.actor_id, "type": record.type,
        "func_or_class_name": record.func_or_class_name, "parent_task_id": record.parent_task_id,
        "node_id": record.node_id, "worker_id": record.worker_id,
        "worker_pid": record.worker_pid, "error_type": record.error_type, "language": "PYTHON",
        "required_resources": None, "placement_group_id": None, "events": None,
        "creation_time_ms": record.creation_time_ms, "start_time_ms": record.start_time_ms,
        "end_time_ms": record.end_time_ms, "error_message": record.error_message,
        "_record": record,
    }
    return row


def _check_filter_keys(resource: StateResource, filters) -> None:
    filterable = RESOURCE_SCHEMAS[resource].filterable_columns()
    for key, _, _ in filters:
        if key not in filterable:
            raise ValueError(
                f"{key!r} is not a filterable column of {resource.value}; filter on one of: "
                f"{', '.join(sorted(filterable))}")


def _matches(row: dict, filters) -> bool:
    """Ray's filter semantics: values compare as case-insensitive strings."""
    for key, predicate, value in filters:
        equal = str(row.get(key)).lower() == str(value).lower()
        if equal != (predicate == "="):
            return False
    return True


def now_ms() -> int:
    return int(time.time() * 1000)


__all__ = ["GcsStateSource"]
