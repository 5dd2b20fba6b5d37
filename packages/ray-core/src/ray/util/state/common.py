"""The rows the state API returns: one dataclass per resource, with Ray's field names.

Each field is a ``state_column``: ``filterable`` columns may appear in ``filters``,
``detail`` columns are filled only with ``detail=True`` (and shown by ``ray list
--detail``). Rows also answer ``row["field"]`` and ``row.get("field")`` (older Ray
returned dicts).
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field, fields

DEFAULT_LIMIT = 100
DEFAULT_RPC_TIMEOUT = 30
MAX_LIMIT = 10_000


def state_column(*, filterable: bool, detail: bool = False, default=None):
    return field(default=default, metadata={"filterable": filterable, "detail": detail})


class StateResource(enum.Enum):
    ACTORS = "actors"
    JOBS = "jobs"
    PLACEMENT_GROUPS = "placement_groups"
    NODES = "nodes"
    WORKERS = "workers"
    TASKS = "tasks"
    OBJECTS = "objects"


class SummaryResource(enum.Enum):
    ACTORS = "actors"
    TASKS = "tasks"
    OBJECTS = "objects"


class StateSchema:
    """Base of the row classes (each a dataclass)."""

    @classmethod
    def list_columns(cls, detail: bool = True) -> list[str]:
        return [f.name for f in fields(cls) if detail or not f.metadata.get("detail")]

    @classmethod
    def columns(cls) -> set[str]:
        return set(cls.list_columns(detail=True))

    @classmethod
    def filterable_columns(cls) -> set[str]:
        return {f.name for f in fields(cls) if f.metadata.get("filterable")}

    @classmethod
    def base_columns(cls) -> set[str]:
        return set(cls.list_columns(detail=False))

    @classmethod
    def from_dict(cls, data: dict):
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def asdict(self) -> dict:
        return dataclasses.asdict(self)

    def __getitem__(self, key):
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None

    def get(self, key, default=None):
        return getattr(self, key, default)


@dataclass
class ActorState(StateSchema):
    actor_id: str = state_column(filterable=True)
    class_name: str = state_column(filterable=True)
    state: str = state_column(filterable=True)  # PENDING_CREATION, ALIVE, RESTARTING, DEAD
    job_id: str = state_column(filterable=True)
    name: str | None = state_column(filterable=True)
    node_id: str | None = state_column(filterable=True)
    pid: int | None = state_column(filterable=True)
    ray_namespace: str | None = state_column(filterable=True)
    required_resources: dict | None = state_column(filterable=False, detail=True)
    death_cause: dict | None = state_column(filterable=False, detail=True)
    is_detached: bool | None = state_column(filterable=False, detail=True)
    placement_group_id: str | None = state_column(filterable=True, detail=True)
    repr_name: str | None = state_column(filterable=True, detail=True)
    num_restarts: int = state_column(filterable=False, detail=True, default=0)
    # the stack of the .remote() that created it (RAY_record_task_actor_creation_sites=true)
    call_site: str | None = state_column(filterable=False, detail=True)


@dataclass
class TaskState(StateSchema):
    task_id: str = state_column(filterable=True)
    attempt_number: int = state_column(filterable=True, default=0)
    name: str = state_column(filterable=True)
    state: str = state_column(filterable=True)
    job_id: str = state_column(filterable=True)
    actor_id: str | None = state_column(filterable=True)
    type: str = state_column(filterable=True)
    func_or_class_name: str = state_column(filterable=True)
    parent_task_id: str = state_column(filterable=True)
    node_id: str | None = state_column(filterable=True)
    worker_id: str | None = state_column(filterable=True)
    worker_pid: int | None = state_column(filterable=True)
    error_type: str | None = state_column(filterable=True)
    language: str | None = state_column(filterable=True, detail=True)
    required_resources: dict | None = state_column(filterable=False, detail=True)
    placement_group_id: str | None = state_column(filterable=True, detail=True)
    events: list | None = state_column(filterable=False, detail=True)
    creation_time_ms: int | None = state_column(filterable=False, detail=True)
    start_time_ms: int | None = state_column(filterable=False, detail=True)
    end_time_ms: int | None = state_column(filterable=False, detail=True)
    error_message: str | None = state_column(filterable=False, detail=True)
    # the stack of its .remote() call (RAY_record_task_actor_creation_sites=true)
    call_site: str | None = state_column(filterable=False, detail=True)


@dataclass
class NodeState(StateSchema):
    node_id: str = state_column(filterable=True)
    node_ip: str = state_column(filterable=True)
    is_head_node: bool = state_column(filterable=True)
    state: str = state_column(filterable=True)  # ALIVE, DEAD
    state_message: str | None = state_column(filterable=False)
    node_name: str = state_column(filterable=True)
    resources_total: dict = state_column(filterable=False)
    labels: dict = state_column(filterable=False)
    start_time_ms: int | None = state_column(filterable=False, detail=True)
    end_time_ms: int | None = state_column(filterable=False, detail=True)


@dataclass
class JobState(StateSchema):
    job_id: str | None = state_column(filterable=True)
    submission_id: str | None = state_column(filterable=True)
    entrypoint: str = state_column(filterable=False, default="")
    type: str = state_column(filterable=True, default="DRIVER")  # SUBMISSION or DRIVER
    status: str = state_column(filterable=True, default="RUNNING")
    message: str | None = state_column(filterable=False)
    error_type: str | None = state_column(filterable=False)
    driver_info: dict | None = state_column(filterable=False)
    start_time: int | None = state_column(filterable=False, detail=True)
    end_time: int | None = state_column(filterable=False, detail=True)
    metadata: dict | None = state_column(filterable=False, detail=True)
    runtime_env: dict | None = state_column(filterable=False, detail=True)
    driver_agent_http_address: str | None = state_column(filterable=False, detail=True)
    driver_node_id: str | None = state_column(filterable=False, detail=True)
    driver_exit_code: int | None = state_column(filterable=False, detail=True)


@dataclass
class WorkerState(StateSchema):
    worker_id: str = state_column(filterable=True)
    is_alive: bool = state_column(filterable=True, default=True)
    worker_type: str = state_column(filterable=True)  # WORKER, DRIVER
    exit_type: str | None = state_column(filterable=True)
    node_id: str = state_column(filterable=True)
    ip: str = state_column(filterable=True)
    pid: int = state_column(filterable=True)
    exit_detail: str | None = state_column(filterable=False, detail=True)
    job_id: str | None = state_column(filterable=True, detail=True)
    actor_id: str | None = state_column(filterable=True, detail=True)
    running_task_id: str | None = state_column(filterable=True, detail=True)


@dataclass
class PlacementGroupState(StateSchema):
    placement_group_id: str = state_column(filterable=True)
    name: str = state_column(filterable=True)
    creator_job_id: str = state_column(filterable=True)
    state: str = state_column(filterable=True)  # PENDING, CREATED, REMOVED, RESCHEDULING
    bundles: list | None = state_column(filterable=False, detail=True)
    is_detached: bool | None = state_column(filterable=True, detail=True)
    stats: dict | None = state_column(filterable=False, detail=True)


@dataclass
class ObjectState(StateSchema):
    object_id: str = state_column(filterable=True)
    object_size: int | None = state_column(filterable=True)
    task_status: str = state_column(filterable=True, default="NIL")
    attempt_number: int = state_column(filterable=True, default=0)
    reference_type: str = state_column(filterable=True)
    call_site: str = state_column(filterable=True, default="disabled")
    type: str = state_column(filterable=True)  # WORKER, DRIVER
    pid: int = state_column(filterable=True)
    ip: str = state_column(filterable=True)


@dataclass(frozen=True)
class ResourceSpec:
    """What the state API needs to know of one resource to list and get it."""

    schema: type[StateSchema]
    noun: str  # one row, in words: "actor", "placement group"
    # ``get_<resource>(id)`` matches these columns in turn and answers the first that matches
    # (a driver job has no submission id, so jobs fall back to the job id)
    id_columns: tuple[str, ...]
    get_returns_all: bool = False  # get_objects(): every reference to the object, not one


RESOURCES: dict[StateResource, ResourceSpec] = {
    StateResource.ACTORS: ResourceSpec(ActorState, "actor", ("actor_id",)),
    StateResource.TASKS: ResourceSpec(TaskState, "task", ("task_id",)),
    StateResource.NODES: ResourceSpec(NodeState, "node", ("node_id",)),
    StateResource.JOBS: ResourceSpec(JobState, "job", ("submission_id", "job_id")),
    StateResource.WORKERS: ResourceSpec(WorkerState, "worker", ("worker_id",)),
    StateResource.PLACEMENT_GROUPS: ResourceSpec(PlacementGroupState, "placement group",
                                                 ("placement_group_id",)),
    StateResource.OBJECTS: ResourceSpec(ObjectState, "object", ("object_id",),
                                        get_returns_all=True),
}


def resource_from_name(name: str) -> StateResource:
    """``"tasks"``, ``"placement-groups"`` or ``"placement_groups"`` -> the resource."""
    key = name.strip().lower().replace("-", "_")
    for resource in StateResource:
        if resource.value == key:
            return resource
    names = ", ".join(r.value.replace("_", "-") for r in StateResource)
    raise ValueError(f"Unknown resource {name!r}; the state API lists: {names}")


@dataclass(frozen=True)
class ListOptions:
    """What one list call asks for (checked when built)."""

    limit: int = DEFAULT_LIMIT
    timeout: float = DEFAULT_RPC_TIMEOUT
    detail: bool = False
    filters: tuple = ()

    def __post_init__(self):
        if isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 1:
            raise ValueError(f"limit must be a positive integer, got {self.limit!r}")
        if self.limit > MAX_LIMIT:
            raise ValueError(f"limit can be at most {MAX_LIMIT}, got {self.limit}")
        if not isinstance(self.timeout, int | float) or self.timeout <= 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {self.timeout!r}")
        object.__setattr__(self, "filters", tuple(_check_filter(f) for f in self.filters or ()))


def _check_filter(item) -> tuple:
    if not isinstance(item, list | tuple) or len(item) != 3:
        raise ValueError(
            f"A filter is a (key, predicate, value) tuple such as ('state', '=', 'RUNNING'), "
            f"got {item!r}")
    key, predicate, value = item
    if predicate not in ("=", "!="):
        raise ValueError(f"A filter's predicate is '=' or '!=', got {predicate!r} in {item!r}")
    return (str(key), predicate, value)


@dataclass
class ListResult:
    """One list answer: the rows after filtering and the limit, and the counts Ray reports.

    ``total`` > ``num_after_truncation`` when the source knows of rows it could not
    return (task events dropped by a full buffer, references a process did not report);
    ``partial_failure_warning`` names the processes that did not answer in time."""

    result: list[dict]
    total: int  # rows the source had before filtering (with those it could not return)
    num_after_truncation: int  # rows the source returned
    num_filtered: int  # rows that matched the filters (before the limit)
    partial_failure_warning: str = ""
    warnings: list[str] = field(default_factory=list)
    num_status_task_events_dropped: int = 0  # tasks only: events no process could ship

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class SummaryResult:
    """One summary answer: ``summary`` is ``{"cluster": {...}}``; the counts are those of
    the rows it summarizes (as in ``ListResult``)."""

    summary: dict
    total: int
    num_after_truncation: int
    partial_failure_warning: str = ""
    warnings: list[str] = field(default_factory=list)
    num_status_task_events_dropped: int = 0

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


__all__ = ["DEFAULT_LIMIT", "DEFAULT_RPC_TIMEOUT", "RESOURCES", "ActorState", "JobState",
           "ListOptions", "ListResult", "NodeState", "ObjectState", "PlacementGroupState",
           "ResourceSpec", "StateResource", "StateSchema",
           "SummaryResource", "SummaryResult", "TaskState", "WorkerState", "resource_from_name",
           "state_column"]
