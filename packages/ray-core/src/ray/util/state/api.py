"""``ray.util.state``: list, get and summarize what a cluster runs (Ray's state API).

Every function takes ``address``:

* ``None``: the cluster this process is connected to (after ``ray.init``, or inside a
  task), else the one on this machine (as ``"auto"``, or ``$RAY_ADDRESS``);
* ``"auto"`` / ``"host:port"`` (the GCS address ``ray start --head`` printed): read the
  cluster's GCS directly, no dashboard needed;
* ``"http://host:8265"``: ask the dashboard, whose ``/api/v0/`` routes give the same
  answers (Ray's routes and envelope).

``timeout`` (seconds) is the call's deadline. An answer is partial when a driver or
worker did not answer within it (workers, objects), when processes dropped task events
because their buffer was full (tasks: Ray's ``num_status_task_events_dropped``), or when
a process held more references than it reports (objects). A partial answer raises
``RayStateApiException`` with ``raise_on_missing_output=True`` (the default, as in Ray),
else it is returned with a ``UserWarning`` saying what is missing.
"""

from __future__ import annotations

import os
import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any, Protocol, TypeVar

from ray.util.state.common import (
    DEFAULT_LIMIT,
    DEFAULT_RPC_TIMEOUT,
    MAX_LIMIT,
    RESOURCES,
    ActorState,
    JobState,
    ListOptions,
    ListResult,
    NodeState,
    ObjectState,
    PlacementGroupState,
    StateResource,
    StateSchema,
    SummaryResource,
    SummaryResult,
    TaskState,
    WorkerState,
)
from ray.util.state.exception import RayStateApiException


# -- where answers come from ----------------------------------------------------------------
class _HttpSource:
    """The dashboard's ``/api/v0/`` routes."""

    def __init__(self, address: str):
        from ray.dashboard.client import DashboardClient

        self.client = DashboardClient(address)

    def _get(self, path: str, params: dict, timeout: float) -> dict:
        response = self.client.request("GET", path, params=params, timeout=timeout)
        try:
            body = response.json()
        except ValueError:
            raise RayStateApiException(
                f"{self.client.address}{path} answered {response.status_code}: "
                f"{response.text[:500]}") from None
        if response.status_code != 200 or not body.get("result"):
            raise RayStateApiException(
                f"{self.client.address}{path} failed ({response.status_code}): "
                f"{body.get('msg') or response.text[:500]}")
        return body["data"]["result"]

    def list(self, resource: StateResource, options: ListOptions) -> ListResult:
        params = {"limit": options.limit, "timeout": options.timeout,
                  "detail": str(options.detail).lower(),
                  "filter_keys": [f[0] for f in options.filters],
                  "filter_predicates": [f[1] for f in options.filters],
                  "filter_values": [str(f[2]) for f in options.filters]}
        data = self._get(f"/api/v0/{resource.value}", params, options.timeout)
        return ListResult(result=data["result"], total=data["total"],
                          num_after_truncation=data["num_after_truncation"],
                          num_filtered=data["num_filtered"],
                          partial_failure_warning=data.get("partial_failure_warning") or "",
                          warnings=data.get("warnings") or [],
                          num_status_task_events_dropped=data.get(
                              "num_status_task_events_dropped") or 0)

    def summarize(self, resource: SummaryResource,
                  timeout: float = DEFAULT_RPC_TIMEOUT) -> SummaryResult:
        data = self._get(f"/api/v0/{resource.value}/summarize", {"timeout": timeout}, timeout)
        return SummaryResult(summary=data["result"]["node_id_to_summary"], total=data["total"],
                             num_after_truncation=data["num_after_truncation"],
                             partial_failure_warning=data.get("partial_failure_warning") or "",
                             warnings=data.get("warnings") or [],
                             num_status_task_events_dropped=data.get(
                                 "num_status_task_events_dropped") or 0)


_gcs_clients: dict[str, object] = {}
_gcs_lock = threading.Lock()


def _source(address: str | None):
    from ray._private.driver import _resolve_address
    from ray.util.state._source import GcsStateSource

    if address is None:
        gcs = _connected_gcs()
        if gcs is not None:
            return GcsStateSource(gcs)
        address = "auto"
    if address == "auto" and os.environ.get("RAY_ADDRESS", "").startswith("http"):
        address = os.environ["RAY_ADDRESS"]
    if address.startswith(("http://", "https://")):
        return _HttpSource(address)
    resolved = _resolve_address(address)
    with _gcs_lock:
        gcs = _gcs_clients.get(resolved)
        if gcs is None:
            from ray._private import auth
            from ray._private.gcs import connect

            gcs = _gcs_clients[resolved] = connect(
                resolved, auth.resolve_secret(resolved, None) or auth.cluster_secret())
    return GcsStateSource(gcs)


def _connected_gcs():
    """The GCS client of the runtime this process is connected to, if any.

    Local mode has no cluster, and so no state to list."""
    from ray._private import runtime as _runtime
    from ray._private.runtime.interface import LocalModeUnsupported

    rt = _runtime.maybe_current()
    if rt is None:
        return None
    try:
        return rt.gcs_client()
    except LocalModeUnsupported:
        raise RayStateApiException(
            "The state API reads a cluster's GCS, and ray.init(local_mode=True) runs no "
            "cluster: call ray.init() without local_mode, or pass address= of a cluster."
        ) from None


def _explain(resource, result: ListResult | SummaryResult | None, started: float) -> None:
    counts = ""
    if isinstance(result, ListResult):
        counts = (f"; {result.num_filtered} of {result.total} matched, {len(result.result)} "
                  "returned")
    print(f"state API: {resource.value} answered in {time.time() - started:.3f} s{counts}")
    for warning in (result.warnings if result is not None else []):
        print(f"warning: {warning}")


def _missing_output(resource, result: ListResult | SummaryResult) -> str:
    """What a partial answer lacks, in words ("" when the answer is complete)."""
    parts = []
    if result.partial_failure_warning:
        parts.append(result.partial_failure_warning)
    if result.total != result.num_after_truncation:
        dropped = result.num_status_task_events_dropped
        if dropped:
            parts.append(
                f"{dropped} task events were dropped before they reached the GCS "
                f"(num_status_task_events_dropped={dropped}): a process recorded more than "
                "task_events_max_buffered events within one flush period, so some tasks "
                "are missing or show an earlier state (raise RAY_task_events_max_buffered).")
        if result.total - result.num_after_truncation > dropped:
            parts.append(
                f"{result.num_after_truncation} of {result.total} {resource.value} could "
                "be read: " + " ".join(w for w in result.warnings if "reports at most" in w))
    return " ".join(p.strip() for p in parts)


def _check_missing(resource, result: ListResult | SummaryResult, raise_on_missing_output,
                   stacklevel: int = 4) -> None:
    missing = _missing_output(resource, result)
    if not missing:
        return
    if raise_on_missing_output:
        raise RayStateApiException(
            f"Failed to retrieve all {resource.value} from the cluster: {missing} "
            "(pass raise_on_missing_output=False to accept a partial answer).")
    warnings.warn(f"The returned {resource.value} may be incomplete: {missing}",
                  UserWarning, stacklevel=stacklevel)


# -- list, get, summarize -------------------------------------------------------------------
# One generic function each, driven by the RESOURCES table (``ray list|get|summary`` call
# these); the per-resource functions (Ray's public names and signatures) are made from them
# further down.
def list_resource(resource: StateResource, address, filters, limit, timeout, detail,
                  raise_on_missing_output, explain) -> list:
    options = ListOptions(limit=limit, timeout=timeout, detail=detail,
                          filters=tuple(filters or ()))
    started = time.time()
    result = _source(address).list(resource, options)
    _check_missing(resource, result, raise_on_missing_output)
    if explain:
        _explain(resource, result, started)
    schema = RESOURCES[resource].schema
    return [schema.from_dict(row) for row in result.result]


def get_resource(resource: StateResource, id: str, address, timeout, explain):
    spec = RESOURCES[resource]
    if not isinstance(id, str) or not id:
        raise ValueError(f"{spec.noun.capitalize()} ids are non-empty strings, got {id!r}")
    rows: list = []
    for column in spec.id_columns:
        rows = list_resource(resource, address, [(column, "=", id)], MAX_LIMIT, timeout, True,
                             False, explain)
        if rows:
            break
    if spec.get_returns_all:
        return rows
    return rows[0] if rows else None


def summarize_resource(resource: SummaryResource, address, timeout, raise_on_missing_output,
                       explain) -> dict:
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    started = time.time()
    result = _source(address).summarize(resource, timeout)
    _check_missing(resource, result, raise_on_missing_output)
    if explain:
        _explain(resource, result, started)
    return result.summary


_Row = TypeVar("_Row", bound=StateSchema)
_Row_co = TypeVar("_Row_co", bound=StateSchema, covariant=True)


class _ListFunction(Protocol[_Row]):
    """``list_<resource>``'s signature (Ray's)."""

    def __call__(self, address=None, filters=None, limit=DEFAULT_LIMIT,
                 timeout=DEFAULT_RPC_TIMEOUT, detail=False, raise_on_missing_output=True,
                 _explain=False) -> list[_Row]: ...


class _GetFunction(Protocol[_Row_co]):
    """``get_<resource>``'s signature (Ray's)."""

    def __call__(self, id: str, address=None, timeout=DEFAULT_RPC_TIMEOUT,
                 _explain=False) -> _Row_co | None: ...


class _SummarizeFunction(Protocol):
    """``summarize_<resource>``'s signature (Ray's)."""

    def __call__(self, address=None, timeout=DEFAULT_RPC_TIMEOUT,
                 raise_on_missing_output=True, _explain=False) -> dict: ...


def _public(fn, name: str, returns: str, doc: str):
    """``fn`` under its public name (so that it pickles and reads as ``name``)."""
    fn.__name__ = fn.__qualname__ = name
    fn.__annotations__["return"] = returns
    fn.__doc__ = doc
    return fn


def _list_function(resource: StateResource) -> _ListFunction[Any]:
    schema = RESOURCES[resource].schema.__name__

    def list_rows(address=None, filters=None, limit=DEFAULT_LIMIT, timeout=DEFAULT_RPC_TIMEOUT,
                  detail=False, raise_on_missing_output=True, _explain=False):
        return list_resource(resource, address, filters, limit, timeout, detail,
                             raise_on_missing_output, _explain)

    return _public(list_rows, f"list_{resource.value}", f"list[{schema}]",
                   f"The cluster's {resource.value.replace('_', ' ')}, as ``{schema}`` rows: "
                   "those matching ``filters`` ((column, '=' or '!=', value) tuples on "
                   "filterable columns), at most ``limit``; ``detail=True`` fills the detail "
                   "columns too.")


def _get_function(resource: StateResource) -> _GetFunction[Any]:
    spec = RESOURCES[resource]

    def get_row(id: str, address=None, timeout=DEFAULT_RPC_TIMEOUT, _explain=False):
        return get_resource(resource, id, address, timeout, _explain)

    column, *fallbacks = spec.id_columns
    matched = column + "".join(f" (else {c})" for c in fallbacks)
    return _public(get_row, f"get_{spec.noun.replace(' ', '_')}",
                   f"{spec.schema.__name__} | None",
                   f"The {spec.noun} whose {matched} is ``id``, with every column; None when "
                   "there is none.")


def _summarize_function(resource: SummaryResource) -> _SummarizeFunction:
    def summarize(address=None, timeout=DEFAULT_RPC_TIMEOUT, raise_on_missing_output=True,
                  _explain=False):
        return summarize_resource(resource, address, timeout, raise_on_missing_output, _explain)

    return _public(summarize, f"summarize_{resource.value}", "dict",
                   f"The cluster's {resource.value}, counted: ``{{'cluster': {{...}}}}``.")


list_actors: _ListFunction[ActorState] = _list_function(StateResource.ACTORS)
list_tasks: _ListFunction[TaskState] = _list_function(StateResource.TASKS)
list_nodes: _ListFunction[NodeState] = _list_function(StateResource.NODES)
list_jobs: _ListFunction[JobState] = _list_function(StateResource.JOBS)
list_placement_groups: _ListFunction[PlacementGroupState] = _list_function(
    StateResource.PLACEMENT_GROUPS)
list_workers: _ListFunction[WorkerState] = _list_function(StateResource.WORKERS)
list_objects: _ListFunction[ObjectState] = _list_function(StateResource.OBJECTS)

get_actor: _GetFunction[ActorState] = _get_function(StateResource.ACTORS)
get_node: _GetFunction[NodeState] = _get_function(StateResource.NODES)
get_job: _GetFunction[JobState] = _get_function(StateResource.JOBS)
get_placement_group: _GetFunction[PlacementGroupState] = _get_function(
    StateResource.PLACEMENT_GROUPS)
get_worker: _GetFunction[WorkerState] = _get_function(StateResource.WORKERS)


def get_task(id, address=None, timeout=DEFAULT_RPC_TIMEOUT, _explain=False) -> TaskState | None:
    """By task id (hex), or by an ``ObjectRef`` the task returned."""
    if not isinstance(id, str):
        task_id = getattr(id, "task_id", None)
        if task_id is None:
            raise ValueError(f"get_task() takes a task id (hex) or an ObjectRef, got {id!r}")
        id = task_id().hex()
    return get_resource(StateResource.TASKS, id, address, timeout, _explain)


def get_objects(id: str, address=None, timeout=DEFAULT_RPC_TIMEOUT,
                _explain=False) -> list[ObjectState]:
    """Every reference to the object ``id`` (one row per process holding one)."""
    return get_resource(StateResource.OBJECTS, id, address, timeout, _explain)


summarize_tasks: _SummarizeFunction = _summarize_function(SummaryResource.TASKS)
summarize_actors: _SummarizeFunction = _summarize_function(SummaryResource.ACTORS)
summarize_objects: _SummarizeFunction = _summarize_function(SummaryResource.OBJECTS)


# -- logs ------------------------------------------------------------------------------------
def list_logs(address=None, node_id=None, node_ip=None, glob_filter=None,
              timeout=DEFAULT_RPC_TIMEOUT) -> dict[str, list[str]]:
    """Log files of one node (the head unless ``node_id``/``node_ip`` names one), grouped
    as Ray groups them (raylet, worker_out, ...); read from that node's raylet."""
    return _cluster_logs(address).list_logs(node_id=node_id, node_ip=node_ip,
                                            glob_filter=glob_filter or "*")


def get_log(address=None, node_id=None, node_ip=None, filename=None, actor_id=None,
            task_id=None, pid=None, follow=False, tail=-1, timeout=DEFAULT_RPC_TIMEOUT,
            suffix="out", encoding="utf-8", errors="strict", submission_id=None,
            attempt_number=0, _interval=None, filter_ansi_code=False) -> Iterator[str]:
    """Yield a log file's content: by file name on a node, or the log of an actor, task,
    worker pid or submitted job, from whichever node it is on. ``follow=True`` keeps
    yielding what is appended."""
    from ray._private import log_reader

    query = log_reader.LogQuery(
        node_id=node_id, node_ip=node_ip, filename=filename, actor_id=actor_id,
        task_id=task_id, pid=pid, suffix=suffix, submission_id=submission_id,
        attempt_number=attempt_number, tail_lines=tail, follow=follow,
        interval_s=_interval if _interval is not None else 0.5,
        filter_ansi_code=filter_ansi_code)
    for chunk in _cluster_logs(address).stream(query):
        yield chunk if encoding is None else chunk.decode(encoding, errors)


def _cluster_logs(address):
    """The cluster's logs: node and worker lookups in its GCS, the files from its raylets
    (which check the cluster secret: the connected runtime's, else the one for the
    address, as ``ray.init(address=...)`` finds it)."""
    from ray._private import auth
    from ray._private.driver import _resolve_address
    from ray._private.log_reader import ClusterLogs

    source = _source(address)
    if isinstance(source, _HttpSource):
        raise RayStateApiException(
            "Logs are read through the cluster's GCS: pass address='auto' or the GCS "
            "address (host:port), not the dashboard URL.")
    if address is None and _connected_gcs() is not None:
        return ClusterLogs(source.gcs, auth.cluster_secret())
    resolved = _resolve_address(address or "auto")
    return ClusterLogs(source.gcs, auth.resolve_secret(resolved, None) or auth.cluster_secret())


__all__ = [
    "get_actor", "get_job", "get_log", "get_node", "get_objects", "get_placement_group",
    "get_resource", "get_task", "get_worker", "list_actors", "list_jobs", "list_logs",
    "list_nodes", "list_objects", "list_placement_groups", "list_resource", "list_tasks",
    "list_workers", "summarize_actors", "summarize_objects", "summarize_resource",
    "summarize_tasks",
]
