"""Global state: timeline, tasks, objects, errors, live references.

Two layers: functions of a GCS client (``*_from_gcs``, ``introspect``), which
the dashboard and the CLI use without a driver, and the public ``ray.timeline``
/ ``ray.tasks`` / ... wrappers, which use the connected driver's GCS client.
"""

from __future__ import annotations

import json
import secrets
import threading
import time

import msgpack

from ray._private import chrome_trace, profiling
from ray._private import runtime as _runtime
from ray._private.gcs import keys


# -- GCS-level queries (no driver needed) -----------------------------------------------------
def events_from_gcs(gcs, tail_batches: int | None = None) -> list[dict]:
    """Profile events; ``tail_batches`` reads only the newest batches of each shard."""
    start = -tail_batches if tail_batches else 0
    return profiling.decode_batches(gcs.sharded_lrange(keys.PROFILE_EVENTS, start))


def task_table(events: list[dict]) -> dict[str, dict]:
    """Finished tasks by id (hex): name, submit/start/end times and where they ran."""
    table: dict[str, dict] = {}
    for e in events:
        if e["event_type"] == "task:execute":
            extra = e["extra"]
            task_id = extra.get("task_id", "")
            table[task_id] = {"TaskID": task_id, "FunctionName": e["name"],
                              "SubmitTime": extra.get("submitted"),
                              "StartTime": e["start"], "EndTime": e["end"],
                              "NodeIP": e["node_ip"], "WorkerPid": e["pid"]}
    return table


def jobs_from_gcs(gcs) -> dict[str, dict]:
    return gcs.hgetall_obj(keys.JOBS)


def errors_from_gcs(gcs, job_hex: str | None = None) -> list[dict]:
    """Errors stored per job (task failures), oldest first."""
    job_ids = [job_hex] if job_hex else sorted(jobs_from_gcs(gcs))
    out = []
    for job in job_ids:
        for raw in gcs.sharded_lrange(keys.errors(job)):
            try:
                error = msgpack.unpackb(raw, raw=False)
            except Exception:  # noqa: BLE001 - an entry from an older writer
                continue
            if isinstance(error, dict):
                error.setdefault("job_id", job)
                out.append(error)
    out.sort(key=lambda err: err.get("time", 0))
    return out


def actors_from_gcs(gcs) -> dict[str, dict]:
    return gcs.hgetall_obj(keys.ACTORS)


def introspect(gcs, what=(), timeout_s: float = 1.0) -> list[dict]:
    """Ask every driver and worker for its live state; returns their replies.

    Waits until every process subscribed when the request (or a repeat of it) went out
    answered, or ``timeout_s``.
    """
    return introspect_counted(gcs, what, timeout_s)[0]


# When a request that not everybody answered yet goes out again (seconds after the one
# before; then every last one): see introspect_counted.
_ASK_AGAIN_AFTER_S = (0.2, 0.5, 1.0, 2.0)


def introspect_counted(gcs, what=(), timeout_s: float = 1.0) -> tuple[list[dict], int]:
    """``introspect``, and how many processes it counts: those that answered and those
    that are still there and did not (more than the replies when some did not answer
    within ``timeout_s``).

    Pub/sub counts the processes subscribed when a request goes out, including one about
    to exit (a killed actor, a trimmed idle worker) that never answers. So a request not
    everybody answered goes out again after a while (a round, counted afresh): a process
    that answered already says only that it is still there, and the answer is complete
    once every process a round reached answered it. A process that exited is in no later
    round; one alive but not answering (busy, stopped) is in every round and stays
    counted as missing until the deadline.
    """
    request_id = secrets.token_hex(8)
    channel = keys.channel_introspect_reply(request_id)
    lock = threading.Lock()
    reports: dict = {}  # worker id -> its report (the first it sent)
    heard: dict[int, set] = {}  # round -> the workers that answered it
    asked: dict[int, int] = {}  # round -> how many processes it reached
    done = threading.Event()

    def complete() -> bool:
        return any(len(heard.get(r, ())) >= n for r, n in asked.items())

    def on_reply(_channel, msg):
        if not isinstance(msg, dict):
            return
        report = dict(msg)
        round_ = report.pop("round", 0)
        again = report.pop("again", False)
        worker = report.get("worker_id")
        with lock:
            if not again:
                reports.setdefault(worker, report)
            heard.setdefault(round_, set()).add(worker)
            if complete():
                done.set()

    deadline = time.monotonic() + timeout_s
    gcs.subscribe_obj(channel, on_reply, confirm=True)  # live before the request goes out
    try:
        round_ = 0
        while True:
            reached = gcs.publish_obj(keys.CHANNEL_INTROSPECT,
                                      {"id": request_id, "what": list(what), "round": round_})
            with lock:
                asked[round_] = reached
                if complete():
                    done.set()
            pause = _ASK_AGAIN_AFTER_S[min(round_, len(_ASK_AGAIN_AFTER_S) - 1)]
            if done.wait(max(0.0, min(pause, deadline - time.monotonic()))) \
                    or time.monotonic() >= deadline:
                break
            round_ += 1
    finally:
        gcs.unsubscribe(channel)
    with lock:
        # Who did not answer: the fewest any round missed (one who exited is missing only
        # from the rounds that reached it before it went).
        missing = min(max(0, n - len(heard.get(r, ()))) for r, n in asked.items())
        return list(reports.values()), len(reports) + missing


def memory_table(gcs, timeout_s: float = 1.0) -> list[dict]:
    """Every live object reference in the cluster, one row per (process, object)."""
    return memory_rows(introspect(gcs, what=("refs",), timeout_s=timeout_s))


def memory_rows(reports: list[dict]) -> list[dict]:
    """The reference rows of introspection replies asked for ``"refs"``."""
    rows = []
    for report in reports:
        where = {"pid": report["pid"], "node_ip": report["node_ip"], "mode": report["mode"],
                 "job_id": report["job_id"], "worker_id": report["worker_id"]}
        for ref in report.get("refs", ()):
            rows.append(dict(ref, **where))
        if report.get("refs_not_reported"):
            rows.append(dict(where, object_id=None, reference_type="NOT_REPORTED",
                             size_bytes=None, location="", owned=False, owner="",
                             local_refs=report["refs_not_reported"],
                             submitted_task_refs=0, borrowers=0))
    return rows


def _write_or_return(trace, filename):
    if filename is not None:
        with open(filename, "w") as f:
            json.dump(trace, f)
        return None
    return trace


# -- public API (connected driver) -----------------------------------------------------------
def _events(rt) -> list[dict]:
    return rt.timeline_events()


def timeline(filename: str | None = None):
    """Every task's scheduling, fetch and execution phases, ``ray.profile`` spans and
    data-dependency arrows, as Chrome-trace JSON (written to ``filename`` if given)."""
    return _write_or_return(chrome_trace.task_trace(_events(_runtime.current())), filename)


def object_transfer_timeline(filename: str | None = None):
    """Object transfers between nodes as Chrome-trace JSON (turn on "Flow events")."""
    return _write_or_return(chrome_trace.transfer_trace(_events(_runtime.current())), filename)


def tasks(task_id: str | None = None):
    table = task_table(_events(_runtime.current()))
    return table.get(task_id) if task_id is not None else table


def objects(object_id: str | None = None):
    """This process's reference table: object ids (hex) it holds, with sizes and owners."""
    table = {}
    for row in _runtime.current().reference_table():
        table[row["object_id"]] = dict(row, ObjectID=row["object_id"], DataSize=row["size_bytes"],
                                       Location=row["location"])
    return table.get(object_id) if object_id is not None else table


def errors(all_jobs: bool = False, worker=None):
    """Errors pushed to this driver (its tasks' failures and warnings), or every job's.

    ``worker`` is accepted for 0.2.2's ``ray.error_info(worker=...)`` and ignored."""
    rt = _runtime.current()
    if all_jobs:
        return errors_from_gcs(rt.gcs_client())
    return rt.pushed_errors()


class profile:
    """``with ray.profile("event", extra_data={...}):`` adds a span to the timeline."""

    def __init__(self, event_type: str, extra_data: dict | None = None, worker=None):
        if extra_data is not None and not isinstance(extra_data, dict):
            raise TypeError(
                f"ray.profile(extra_data=...) must be a dict of str to str, got "
                f"{type(extra_data).__name__}"
            )
        self.event_type = event_type
        self.extra = extra_data
        self._cm = None

    def __enter__(self):
        rt = _runtime.maybe_current()
        if rt is not None:
            self._cm = rt.profile_span("custom", self.event_type, self.extra)
            self._cm.__enter__()
        return self

    def __exit__(self, *exc):
        if self._cm is not None:
            return self._cm.__exit__(*exc)
        return False
