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

A call's ``timeout`` is its deadline: the introspection waits for the processes' replies
until then (an actor's pid, a convenience Ray reads from its GCS, at most
``PID_LOOKUP_TIMEOUT_S``). What could not be read is reported, as Ray reports it:
processes that did not answer in ``partial_failure_warning``; task events dropped by a
full buffer (``num_status_task_events_dropped``) and references a process did not report
in ``total`` (more than ``num_after_truncation``) and ``warnings``.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import time

from ray._private import ids, state, task_events
from ray._private.gcs import keys
from ray._private.runtime import cluster_info
from ray._private.runtime.introspection import MAX_REFS_REPORTED
from ray.util.state.common import (
    DEFAULT_RPC_TIMEOUT,
    RESOURCES,
    ListOptions,
    ListResult,
    StateResource,
    SummaryResource,
    SummaryResult,
)

PID_LOOKUP_TIMEOUT_S = 1.0
_ACTOR_STATES = {"PENDING": "PENDING_CREATION"}


def _hex(value) -> str | None:
    return value.hex() if isinstance(value, bytes) else value


@dataclasses.dataclass
class _Query:
    """One call: its deadline, and what it could not read."""

    timeout_s: float
    deadline: float
    partial_failures: list[str] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)
    missing: int = 0  # rows the source knows of and could not return
    task_events_dropped: int = 0

    @classmethod
    def start(cls, timeout_s: float) -> _Query:
        return cls(timeout_s=timeout_s, deadline=time.monotonic() + timeout_s)

    def remaining_s(self) -> float:
        return max(0.0, self.deadline - time.monotonic())


class GcsStateSource:
    def __init__(self, gcs):
        self.gcs = gcs
        self.task_table = task_events.TaskTable(gcs)

    # -- list --------------------------------------------------------------------------------
    def list(self, resource: StateResource, options: ListOptions) -> ListResult:
        schema = RESOURCES[resource].schema
        _check_filter_keys(resource, options.filters)
        query = _Query.start(options.timeout)
        rows = getattr(self, f"_{resource.value}")(query)
        matched = [row for row in rows if _matches(row, options.filters)]
        kept = matched[: options.limit]
        if resource is StateResource.ACTORS and kept:
            self._fill_actor_pids(kept, query)
            if options.detail:
                self._fill_actor_call_sites(kept)
        if resource is StateResource.TASKS and options.detail:
            for row in kept:  # built for the rows returned only: one dict per transition
                row["events"] = row["_record"].events
        columns = schema.list_columns(detail=options.detail)
        result = [{c: row.get(c) for c in columns} for row in kept]
        warnings = list(query.warnings)
        if len(matched) > options.limit:
            warnings.append(f"{len(matched)} {resource.value} match; the first "
                            f"{options.limit} are returned (raise limit= / --limit).")
        return ListResult(result=result, total=len(rows) + query.missing,
                          num_after_truncation=len(rows), num_filtered=len(matched),
                          partial_failure_warning=" ".join(query.partial_failures),
                          warnings=warnings,
                          num_status_task_events_dropped=query.task_events_dropped)

    def _actors(self, query: _Query) -> list[dict]:
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

    def _tasks(self, query: _Query) -> list[dict]:
        records = self.task_table.tasks()
        self._count_dropped_task_events(query)
        rows = [_task_row(r) for r in records.values()]
        rows.sort(key=lambda r: r["creation_time_ms"] or r["start_time_ms"] or 0, reverse=True)
        return rows

    def _count_dropped_task_events(self, query: _Query) -> None:
        dropped = task_events.dropped_in_gcs(self.gcs)
        if dropped:
            # Ray counts each dropped event as a missing row (total = returned + dropped)
            query.missing += dropped
            query.task_events_dropped = dropped
            query.warnings.append(
                f"{dropped} task events were dropped (num_status_task_events_dropped): a "
                "process recorded more than task_events_max_buffered events within one "
                "flush period, so some tasks are missing or show an earlier state. Raise "
                "RAY_task_events_max_buffered (or _system_config task_events_max_buffered).")

    def _nodes(self, query: _Query) -> list[dict]:
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

    def _jobs(self, query: _Query) -> list[dict]:
        from ray._private import job_manager

        return job_manager.job_rows(self.gcs)

    def _placement_groups(self, query: _Query) -> list[dict]:
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

    def _workers(self, query: _Query) -> list[dict]:
        rows = []
        for report in self._introspect(query, "workers"):
            running = report.get("running") or {}
            rows.append({
                "worker_id": report["worker_id"], "is_alive": True,
                "worker_type": "DRIVER" if report["mode"] == "driver" else "WORKER",
                "exit_type": None, "node_id": report["node_id"], "ip": report["node_ip"],
                "pid": report["pid"], "exit_detail": None, "job_id": report["job_id"],
                "actor_id": report.get("actor_id"), "running_task_id": running.get("task_id"),
            })
        return rows

    def _objects(self, query: _Query) -> list[dict]:
        statuses = {}
        rows = []
        for ref in state.memory_rows(self._introspect(query, "objects", what=("refs",))):
            if ref.get("object_id") is None:
                query.missing += ref["local_refs"]
                query.warnings.append(
                    f"pid {ref['pid']} on {ref['node_ip']} holds {ref['local_refs']} more "
                    "references than it reports (a process reports at most "
                    f"{MAX_REFS_REPORTED:,}); they are missing from this list.")
                continue
            rows.append({
                "object_id": ref["object_id"], "object_size": ref["size_bytes"],
                "task_status": "NIL", "attempt_number": 0,
                "reference_type": ref["reference_type"], "call_site": "disabled",
                "type": ref["mode"].upper(), "pid": ref["pid"], "ip": ref["node_ip"],
            })
        query.warnings.append(_object_call_site_warning())
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

    def _introspect(self, query: _Query, listing: str, what=(),
                    timeout_s: float | None = None) -> list[dict]:
        """Every process's live state, waiting until the call's deadline (or
        ``timeout_s``) for the replies; who did not answer goes into ``query``."""
        wait_s = query.remaining_s() if timeout_s is None else timeout_s
        replies, asked = state.introspect_counted(self.gcs, what, timeout_s=wait_s)
        if len(replies) < asked:
            query.partial_failures.append(
                f"{asked - len(replies)} of {asked} drivers and workers did not answer "
                f"within {wait_s:.3g} s (timeout={query.timeout_s:g}): their {listing} are "
                "missing. A process that is busy holding the GIL or shutting down answers "
                "late; retry, or pass a longer timeout.")
        replies.sort(key=lambda r: (r["node_ip"], r["mode"] != "driver", r["pid"]))
        return replies

    def _fill_actor_pids(self, rows, query: _Query) -> None:
        if not any(r["state"] == "ALIVE" for r in rows):
            return
        # Ray reads pids from its GCS; here a live lookup, bounded apart from the deadline
        # so that one slow process does not hold up the listing of every actor
        lookup = _Query.start(min(PID_LOOKUP_TIMEOUT_S, query.remaining_s()))
        pids = {r["worker_id"]: r["pid"] for r in self._introspect(
            lookup, "actor pids", timeout_s=lookup.timeout_s)}
        missing = 0
        for row in rows:
            if row["state"] == "ALIVE":
                row["pid"] = pids.get(row.get("_worker_id"))
                missing += row["pid"] is None
        if missing and lookup.partial_failures:
            query.warnings.append(f"pid unknown for {missing} alive actors: "
                                  + " ".join(lookup.partial_failures))

    def _fill_actor_call_sites(self, rows) -> None:
        creations = {r.actor_id: r.call_site for r in self.task_table.tasks().values()
                     if r.type == "ACTOR_CREATION_TASK" and r.call_site}
        for row in rows:
            row["call_site"] = creations.get(row["actor_id"])

    # -- summaries ------------------------------------------------------------------------------
    def summarize(self, resource: SummaryResource,
                  timeout: float = DEFAULT_RPC_TIMEOUT) -> SummaryResult:
        query = _Query.start(timeout)
        summary, rows = getattr(self, f"_summarize_{resource.value}")(query)
        return SummaryResult(summary=summary, total=rows + query.missing,
                             num_after_truncation=rows,
                             partial_failure_warning=" ".join(query.partial_failures),
                             warnings=query.warnings,
                             num_status_task_events_dropped=query.task_events_dropped)

    def _summarize_tasks(self, query: _Query) -> tuple[dict, int]:
        summary: dict[str, dict] = {}
        totals = collections.Counter()
        records = self.task_table.tasks()
        self._count_dropped_task_events(query)
        for record in records.values():
            key = record.func_or_class_name or record.name
            entry = summary.setdefault(key, {"func_or_class_name": key, "type": record.type,
                                             "state_counts": {}})
            entry["state_counts"][record.state] = entry["state_counts"].get(record.state, 0) + 1
            totals[record.type] += 1
        return {"cluster": {
            "summary": summary, "total_tasks": totals["NORMAL_TASK"],
            "total_actor_tasks": totals["ACTOR_TASK"],
            "total_actor_scheduled": totals["ACTOR_CREATION_TASK"], "summary_by": "func_name",
        }}, len(records)

    def _summarize_actors(self, query: _Query) -> tuple[dict, int]:
        summary: dict[str, dict] = {}
        rows = self._actors(query)
        for row in rows:
            entry = summary.setdefault(row["class_name"], {"class_name": row["class_name"],
                                                           "state_counts": {}})
            entry["state_counts"][row["state"]] = entry["state_counts"].get(row["state"], 0) + 1
        return ({"cluster": {"summary": summary, "total_actors": len(rows),
                             "summary_by": "class"}}, len(rows))

    def _summarize_objects(self, query: _Query) -> tuple[dict, int]:
        rows = self._objects(query)
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
                            "summary_by": "callsite"}}, len(rows)


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
        "call_site": record.call_site, "_record": record,
    }
    return row


def _object_call_site_warning() -> str:
    """Ray records an ObjectRef's creation site only with RAY_record_ref_creation_sites=1;
    this runtime does not record them at all, so call_site is always "disabled"."""
    if os.environ.get("RAY_record_ref_creation_sites", "0").strip().lower() in ("0", "", "false"):
        return ("Callsite is not being recorded (call_site is 'disabled'), as in Ray without "
                "RAY_record_ref_creation_sites=1.")
    return ("RAY_record_ref_creation_sites is set, but this runtime does not record where "
            "ObjectRefs were created: call_site is 'disabled'. Where a task or actor was "
            "created is recorded with RAY_record_task_actor_creation_sites=true "
            "(list_tasks(detail=True), list_actors(detail=True)).")


def _check_filter_keys(resource: StateResource, filters) -> None:
    filterable = RESOURCES[resource].schema.filterable_columns()
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
