"""Ray's state API: list, get and summarize actors, tasks, nodes, jobs, workers,
objects and placement groups, and read logs. See ``ray.util.state.api``."""

from ray.util.state.api import (
    get_actor,
    get_job,
    get_log,
    get_node,
    get_objects,
    get_placement_group,
    get_task,
    get_worker,
    list_actors,
    list_jobs,
    list_logs,
    list_nodes,
    list_objects,
    list_placement_groups,
    list_tasks,
    list_workers,
    summarize_actors,
    summarize_objects,
    summarize_tasks,
)
from ray.util.state.common import (
    ActorState,
    JobState,
    NodeState,
    ObjectState,
    PlacementGroupState,
    StateResource,
    TaskState,
    WorkerState,
)
from ray.util.state.exception import RayStateApiException

__all__ = [
    "ActorState", "JobState", "NodeState", "ObjectState", "PlacementGroupState",
    "RayStateApiException", "StateResource", "TaskState", "WorkerState", "get_actor",
    "get_job", "get_log", "get_node", "get_objects", "get_placement_group", "get_task",
    "get_worker", "list_actors", "list_jobs", "list_logs", "list_nodes", "list_objects",
    "list_placement_groups", "list_tasks", "list_workers", "summarize_actors",
    "summarize_objects", "summarize_tasks",
]
