"""Task events: the bounded history of task state transitions behind the state API.

What ``ray.util.state.list_tasks`` / ``summarize_tasks``, ``ray list tasks`` and the
dashboard's task pages show. Three parts:

* **Recording** (every driver and worker): a ``TaskEventRecorder``. The owner records
  ``submitted`` when a task is submitted (with its name, kind, job, parent and attempt),
  ``args_ready`` when a task that waited for its arguments can be scheduled and
  ``failed`` when it gives up on a task (worker died with no retries left, unschedulable,
  removed placement group); the executing worker records ``started`` (a dict insert,
  nothing packed) and ``finished`` / ``failed`` (one packed event with the start and end
  times, the node, worker and pid). A task still running at a flush gets a ``RUNNING``
  event then, so long tasks show as running within one flush period while short tasks
  cost one event at each end.
* **Storing** (the GCS): each event is one element of the Redis list
  ``ray:task_events``; a flush appends a process's events with one ``RPUSH`` and trims
  the list to the newest ``max_events_in_gcs`` (``LTRIM``), so the history is bounded in
  events whatever the number of processes. Events a process dropped (its buffer was
  full) are counted per process in ``ray:task_events_dropped`` (``dropped_in_gcs``):
  the state API reports them as Ray's ``num_status_task_events_dropped``.
* **Querying**: ``read_tasks(gcs)`` reads the list and ``merge`` folds events into one
  ``TaskRecord`` per task id (pure; events may arrive out of order across processes,
  so a state never moves backwards: ``FINISHED`` beats ``RUNNING`` beats ``PENDING_*``).

Wire form of an event (msgpack array; ids as bytes)::

    [SUBMITTED, task_id, t, attempt, name, kind, job_hex, actor_id, parent_task_id, waits,
     call_site]   # call_site only with record_task_actor_creation_sites
    [ARGS_READY, task_id, t]
    [RUNNING, task_id, t_start, node_id, worker_id, pid, name]
    [FINISHED, task_id, t_end, t_start, node_id, worker_id, pid, name]
    [FAILED, task_id, t_end, t_start, node_id, worker_id, pid, name, error_type, message]

``t_start`` / ``node_id`` / ``worker_id`` / ``pid`` of a FAILED event are None when the
owner records it (the task never ran, or its worker is gone).

Retries: executor events carry only the task id, so they apply to the task's latest
attempt; one row per task id is listed (with the latest ``attempt_number``).
"""

from __future__ import annotations

import abc
import dataclasses
import os
import threading
import time
import traceback

import msgpack

from ray._private.gcs import keys

# Event kinds (first element of each event).
SUBMITTED, ARGS_READY, RUNNING, FINISHED, FAILED = range(5)

# Ray's task type names, indexed by the runtime's task kinds (normal, creation, method).
TASK_TYPES = ("NORMAL_TASK", "ACTOR_CREATION_TASK", "ACTOR_TASK")

# Ray's TaskStatus names and how far along each is (a state never moves backwards).
PENDING_ARGS_AVAIL = "PENDING_ARGS_AVAIL"
PENDING_NODE_ASSIGNMENT = "PENDING_NODE_ASSIGNMENT"
STATE_RUNNING = "RUNNING"
STATE_FINISHED = "FINISHED"
STATE_FAILED = "FAILED"
STATES = (PENDING_ARGS_AVAIL, PENDING_NODE_ASSIGNMENT, STATE_RUNNING, STATE_FINISHED,
          STATE_FAILED)
_RANK = {PENDING_ARGS_AVAIL: 0, PENDING_NODE_ASSIGNMENT: 1, STATE_RUNNING: 2,
         STATE_FINISHED: 3, STATE_FAILED: 3}

DEFAULT_MAX_BUFFERED = 100_000
DEFAULT_MAX_EVENTS_IN_GCS = 200_000
MAX_ERROR_MESSAGE_CHARS = 2000


class TaskEventRecorder(abc.ABC):
    """Where a process reports its tasks' state transitions (ids are bytes)."""

    @abc.abstractmethod
    def submitted(self, task_id: bytes, *, name: str, kind: int, job_hex: str,
                  actor_id: bytes | None, parent_task_id: bytes | None, attempt: int = 0,
                  waits_for_args: bool = False) -> None:
        """The owner submitted a task (or a retry of it: ``attempt`` > 0)."""

    @abc.abstractmethod
    def args_ready(self, task_id: bytes) -> None:
        """The owner resolved the arguments the task waited for."""

    @abc.abstractmethod
    def started(self, task_id: bytes, name: str) -> None:
        """A worker starts running the task."""

    @abc.abstractmethod
    def finished(self, task_id: bytes) -> None:
        """The task returned (its results are on their way to the owner)."""

    @abc.abstractmethod
    def failed(self, task_id: bytes, error: BaseException | str, message: str = "") -> None:
        """The task raised (on its worker) or the owner gave up on it."""

    @abc.abstractmethod
    def flush(self, gcs) -> int:
        """Ship buffered events to the GCS; returns how many were sent."""


class NoTaskEvents(TaskEventRecorder):
    """Task events turned off (``task_events_enabled: false``): every call is a no-op."""

    def submitted(self, task_id, **_fields) -> None:
        return None

    def args_ready(self, task_id) -> None:
        return None

    def started(self, task_id, name) -> None:
        return None

    def finished(self, task_id) -> None:
        return None

    def failed(self, task_id, error, message="") -> None:
        return None

    def flush(self, gcs) -> int:
        return 0


class BufferedTaskEvents(TaskEventRecorder):
    """Packs each event when it happens into a bounded buffer; ``flush`` ships them.

    Packed at once (bytes are not tracked by the cycle collector, buffered tuples are:
    see ``profiling.EventBuffer``). At most ``capacity`` events wait between flushes; the
    rest are counted in ``dropped`` (and logged at the flush). Thread-safe the same way
    as ``EventBuffer``: one C-level pack and an atomic ``list.append`` per event.
    """

    def __init__(self, *, node_id: bytes, worker_id: bytes, capacity: int = DEFAULT_MAX_BUFFERED,
                 max_events_in_gcs: int = DEFAULT_MAX_EVENTS_IN_GCS, clock=time.time,
                 record_call_sites: bool = False):
        if capacity < 1:
            raise ValueError(f"task_events_max_buffered must be >= 1, got {capacity}")
        if max_events_in_gcs < 1:
            raise ValueError(f"task_events_max_in_gcs must be >= 1, got {max_events_in_gcs}")
        self.capacity = capacity
        self.max_events_in_gcs = max_events_in_gcs
        self.node_id = node_id
        self.worker_id = worker_id
        self.pid = os.getpid()
        self.dropped = 0
        self.dropped_total = 0  # since the process started: what the GCS holds for it
        self.record_call_sites = record_call_sites
        self._clock = clock
        self._events: list[bytes] = []
        self._running: dict[bytes, tuple[float, str]] = {}
        self._reported_running: set[bytes] = set()
        self._lock = threading.Lock()
        self._pack = msgpack.Packer(use_bin_type=True, autoreset=True).pack

    def _add(self, event: list) -> None:
        if len(self._events) < self.capacity:
            self._events.append(self._pack(event))
        else:
            self.dropped += 1

    def submitted(self, task_id, *, name, kind, job_hex, actor_id, parent_task_id, attempt=0,
                  waits_for_args=False) -> None:
        event = [SUBMITTED, task_id, self._clock(), attempt, name, kind, job_hex, actor_id,
                 parent_task_id, waits_for_args]
        if self.record_call_sites:
            event.append(call_site())
        self._add(event)

    def args_ready(self, task_id) -> None:
        self._add([ARGS_READY, task_id, self._clock()])

    def started(self, task_id, name) -> None:
        self._running[task_id] = (self._clock(), name)

    def finished(self, task_id) -> None:
        start, name = self._running.pop(task_id, (None, ""))
        if self._reported_running:
            self._reported_running.discard(task_id)
        self._add([FINISHED, task_id, self._clock(), start, self.node_id, self.worker_id,
                   self.pid, name])

    def failed(self, task_id, error, message="") -> None:
        error_type = error if isinstance(error, str) else _error_type(error)
        if not message and not isinstance(error, str):
            message = f"{type(error).__name__}: {error}"
        entry = self._running.pop(task_id, None)
        if self._reported_running:
            self._reported_running.discard(task_id)
        if entry is None:  # recorded by the owner: the task is not running here
            start, name, node_id, worker_id, pid = None, "", None, None, None
        else:
            start, name = entry
            node_id, worker_id, pid = self.node_id, self.worker_id, self.pid
        self._add([FAILED, task_id, self._clock(), start, node_id, worker_id, pid, name,
                   error_type, message[:MAX_ERROR_MESSAGE_CHARS]])

    def drain(self) -> tuple[list[bytes], int]:
        """The buffered events (plus RUNNING events for tasks running now and not yet
        reported) and how many were dropped since the last drain."""
        for task_id, (start, name) in list(self._running.items()):
            if task_id not in self._reported_running:
                self._reported_running.add(task_id)
                self._add([RUNNING, task_id, start, self.node_id, self.worker_id, self.pid,
                           name])
        with self._lock:
            events, self._events = self._events, []
            dropped, self.dropped = self.dropped, 0
        return events, dropped

    def flush(self, gcs) -> int:
        events, dropped = self.drain()
        if dropped:
            import logging

            logging.getLogger(__name__).warning(
                "%d task events were dropped: more than task_events_max_buffered (%d) "
                "happened within one flush period", dropped, self.capacity)
        if events:
            gcs.rpush_many(keys.TASK_EVENTS, events, max_len=self.max_events_in_gcs)
        if dropped:
            # this process's running total under its own field: no read-modify-write race
            # between processes, and the count outlives the process
            self.dropped_total += dropped
            gcs.hset(keys.TASK_EVENTS_DROPPED, self.worker_id.hex(),
                     str(self.dropped_total).encode())
        return len(events)

    def __len__(self) -> int:
        return len(self._events)


_RAY_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def call_site() -> str:
    """The caller's stack, innermost frame last, without ray's own frames (Ray's
    ``call_site`` of a task or actor with ``RAY_record_task_actor_creation_sites``)."""
    frames = [f for f in traceback.extract_stack()
              if not os.path.abspath(f.filename).startswith(_RAY_PACKAGE_DIR)]
    return "".join(traceback.format_list(frames)).rstrip("\n")


def dropped_in_gcs(gcs) -> int:
    """Task events every process dropped so far (Ray's num_status_task_events_dropped)."""
    return sum(int(v) for v in gcs.hgetall(keys.TASK_EVENTS_DROPPED).values())


def _error_type(error: BaseException) -> str:
    """Ray's error_type names: an exception raised by the task's code (or passed on from
    a failed upstream task) is APPLICATION_ERROR; ray's own errors map to Ray's names."""
    from ray.exceptions import RayTaskError

    if isinstance(error, RayTaskError) or type(error).__module__ != "ray.exceptions":
        return "APPLICATION_ERROR"
    name = type(error).__name__
    return _RAY_ERROR_TYPES.get(name, name)


_RAY_ERROR_TYPES = {
    "WorkerCrashedError": "WORKER_DIED",
    "RayActorError": "ACTOR_DIED",
    "ActorDiedError": "ACTOR_DIED",
    "TaskUnschedulableError": "TASK_UNSCHEDULABLE_ERROR",
    "TaskPlacementGroupRemoved": "TASK_PLACEMENT_GROUP_REMOVED",
    "RuntimeEnvSetupError": "RUNTIME_ENV_SETUP_FAILED",
    "TaskCancelledError": "TASK_CANCELLED",
    "ObjectLostError": "OBJECT_LOST",
    "OutOfMemoryError": "OUT_OF_MEMORY",
    "NodeDiedError": "NODE_DIED",
}


def recorder_for(config, *, node_id: bytes, worker_id: bytes) -> TaskEventRecorder:
    """The recorder a driver or worker uses, as its config says."""
    if not config.task_events_enabled:
        return NoTaskEvents()
    return BufferedTaskEvents(node_id=node_id, worker_id=worker_id,
                              capacity=config.task_events_max_buffered,
                              max_events_in_gcs=config.task_events_max_in_gcs,
                              record_call_sites=config.record_task_actor_creation_sites)


# -- querying -------------------------------------------------------------------------------
@dataclasses.dataclass(slots=True)
class TaskRecord:
    """One task as merged from its events (Ray's ``TaskState`` fields)."""

    task_id: str
    attempt_number: int = 0
    name: str = ""
    # The lowest rank, so the first event decides (a submission that waits for arguments
    # starts at PENDING_ARGS_AVAIL; states only move forward from there).
    state: str = PENDING_ARGS_AVAIL
    job_id: str = ""
    actor_id: str | None = None
    type: str = "NORMAL_TASK"
    func_or_class_name: str = ""
    parent_task_id: str = ""
    node_id: str | None = None
    worker_id: str | None = None
    worker_pid: int | None = None
    error_type: str | None = None
    error_message: str | None = None
    creation_time_ms: int | None = None
    start_time_ms: int | None = None
    end_time_ms: int | None = None
    call_site: str | None = None  # with record_task_actor_creation_sites only
    # (state, unix ms) per transition seen; ``events`` is Ray's form of it.
    transitions: list = dataclasses.field(default_factory=list, repr=False)
    ran_as: str = dataclasses.field(default="", repr=False)  # the name its worker reported
    # Start and end as recorded (seconds): run times shorter than a millisecond count.
    start_s: float | None = dataclasses.field(default=None, repr=False)
    end_s: float | None = dataclasses.field(default=None, repr=False)

    def _advance(self, state: str, t_ms: int | None) -> None:
        if t_ms is not None:
            self.transitions.append((state, t_ms))
        if _RANK[state] >= _RANK[self.state]:
            self.state = state

    @property
    def events(self) -> list[dict]:
        # by time, then by how far along (a task that starts within the millisecond of
        # its submission lists PENDING_... first, whichever event arrived first)
        return [{"state": s, "created_ms": t} for s, t in sorted(
            self.transitions, key=lambda e: (e[1], _RANK[e[0]]))]

    @property
    def duration_s(self) -> float | None:
        if self.start_s is None or self.end_s is None:
            return None
        return max(0.0, self.end_s - self.start_s)


def _hex(value) -> str | None:
    return value.hex() if isinstance(value, bytes) else value


def decode(raw: list[bytes]) -> list[list]:
    """GCS elements -> event lists (an element not written by this module is skipped)."""
    out = []
    unpack = msgpack.unpackb
    for item in raw:
        try:
            event = unpack(item, raw=False)
        except (ValueError, msgpack.UnpackException):
            continue
        if type(event) is list and len(event) >= 3:
            out.append(event)
    return out


def merge(events: list[list]) -> dict[str, TaskRecord]:
    """Fold events into one record per task id (hex), in any arrival order."""
    by_id: dict[bytes, TaskRecord] = {}
    get = by_id.get
    for event in events:
        kind, key, t = event[0], event[1], event[2]
        record = get(key)
        if record is None:
            record = by_id[key] = TaskRecord(task_id="")
        if kind == SUBMITTED:
            _apply_submitted(record, event)
        elif kind == FINISHED:
            _apply_ran(record, event[4], event[5], event[6], event[7], event[3], t)
            record._advance(STATE_FINISHED, int(t * 1000))
        elif kind == RUNNING:
            _apply_ran(record, event[3], event[4], event[5], event[6], t, None)
            record._advance(STATE_RUNNING, None)
        elif kind == FAILED:
            _apply_ran(record, event[4], event[5], event[6], event[7], event[3], t)
            record.error_type, record.error_message = event[8], event[9]
            record._advance(STATE_FAILED, int(t * 1000))
        elif kind == ARGS_READY:
            record._advance(PENDING_NODE_ASSIGNMENT, int(t * 1000))
    tasks: dict[str, TaskRecord] = {}
    for key, record in by_id.items():
        record.task_id = key.hex() if isinstance(key, bytes) else str(key)
        if record.type == "ACTOR_TASK" and record.ran_as:
            # The caller knows the method, the worker also the class (Ray: "Class.method").
            record.name = record.func_or_class_name = record.ran_as
        elif record.type == "NORMAL_TASK" and record.creation_time_ms is not None:
            # Ray shows a function's own name, not module.f (as its owner submitted it; a
            # task whose submission has not arrived yet keeps the name its worker gave)
            record.name = record.func_or_class_name = record.name.rsplit(".", 1)[-1]
        tasks[record.task_id] = record
    return tasks


def _apply_submitted(record: TaskRecord, event: list) -> None:
    (_, _, t, attempt, name, kind, job_hex, actor_id, parent, waits) = event[:10]
    if attempt < record.attempt_number:
        return  # an older attempt's submission arrived late
    record.attempt_number = attempt
    record.name = name
    record.func_or_class_name = name
    record.type = TASK_TYPES[kind] if 0 <= kind < len(TASK_TYPES) else str(kind)
    record.job_id = job_hex
    record.actor_id = _hex(actor_id)
    record.parent_task_id = _hex(parent) or ""
    record.creation_time_ms = int(t * 1000)
    if len(event) > 10:
        record.call_site = event[10]
    record._advance(PENDING_ARGS_AVAIL if waits else PENDING_NODE_ASSIGNMENT, int(t * 1000))


def _apply_ran(record: TaskRecord, node_id, worker_id, pid, name, start, end) -> None:
    if start is not None:
        record.start_s = start
        start_ms = int(start * 1000)
        if record.start_time_ms != start_ms:
            record.start_time_ms = start_ms
            record.transitions.append((STATE_RUNNING, start_ms))
    if end is not None:
        record.end_s = end
        record.end_time_ms = int(end * 1000)
    if node_id is not None:
        record.node_id, record.worker_id, record.worker_pid = _hex(node_id), _hex(worker_id), pid
    if name:
        record.ran_as = name
        if not record.name:
            record.name = record.func_or_class_name = name


def read_tasks(gcs) -> dict[str, TaskRecord]:
    """Every task the GCS still holds events for, merged."""
    return merge(decode(gcs.lrange(keys.TASK_EVENTS, 0, -1)))


class TaskTable:
    """``read_tasks`` for a long-lived reader (the dashboard): merged again only when the
    event list changed (its length or newest element), checked at most every
    ``check_period_s``."""

    def __init__(self, gcs, check_period_s: float = 0.5, clock=time.monotonic):
        self._gcs = gcs
        self._period = check_period_s
        self._clock = clock
        self._checked = float("-inf")
        self._signature: tuple | None = None
        self._tasks: dict[str, TaskRecord] = {}
        self._lock = threading.Lock()

    def tasks(self) -> dict[str, TaskRecord]:
        with self._lock:
            if self._clock() - self._checked >= self._period:
                self._checked = self._clock()
                signature = (self._gcs.llen(keys.TASK_EVENTS),
                             tuple(self._gcs.lrange(keys.TASK_EVENTS, -1, -1)))
                if signature != self._signature:
                    self._tasks, self._signature = read_tasks(self._gcs), signature
            return self._tasks


__all__ = ["STATES", "TASK_TYPES", "BufferedTaskEvents", "NoTaskEvents", "TaskEventRecorder",
           "TaskRecord", "TaskTable", "call_site", "decode", "dropped_in_gcs", "merge", "read_tasks",
           "recorder_for"]
