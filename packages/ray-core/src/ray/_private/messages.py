"""The messages drivers, workers and raylets send each other, as small typed classes.

Every message that crosses a process boundary in the task path is a class here with
``to_wire()`` (a msgpack-ready list) and ``from_wire()`` (the inverse, validating
the shape). No other module builds or indexes a wire form: they construct and read
these classes. On the wire they stay msgpack *arrays* (not maps): a task spec as an
array packs and unpacks ~2x faster than the same fields as a map with string keys,
and it is on the path of every task (see docs/architecture.md, "Wire messages").

Task path::

    owner ──request_lease(LeaseRequest)──> raylet ──LeaseReply──> owner
          LeaseGranted | LeaseSpillback | LeaseFailed
    owner ──push_tasks([TaskSpec])──> worker ──tasks_done([TaskDone])──> owner
          ──cancel_task(CancelTask)──>         ──generator_item(GeneratorItem)──>
    borrower ──get_object(id)──> owner ──value_to_wire(Inline | InPlasma)──> borrower

Generators: ``TaskSpec.num_returns`` is ``NUM_RETURNS_STREAMING``/``NUM_RETURNS_DYNAMIC``;
a streaming task's values reach the owner as ``GeneratorItem``s (worker ->
``generator_item`` -> owner) ahead of its ``TaskDone``, which counts them. ``ray.cancel``
sends ``CancelTask`` to the worker that runs (or queues) the task. A retry of a failed
attempt re-sends the same spec from the owner with ``PendingTask.retries_left``
decremented; a concurrency group travels as a TaskSpec field read by the executor's
call runners.

Placement groups (a process -> the head raylet's manager)::

    requester ──create_placement_group(CreatePlacementGroup)──> head raylet
              ──remove_placement_group(group id hex)──>
              <──PlacementGroupReply: PlacementGroupAccepted | PlacementGroupRefused──
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

# -- errors ------------------------------------------------------------------------------


class MalformedMessage(ValueError):
    """A peer sent something that is not the message it claims to be."""


def _expect_list(wire: Any, what: str, min_len: int, max_len: int | None = None) -> list:
    if not isinstance(wire, list | tuple):
        raise MalformedMessage(f"{what}: expected an array, got {type(wire).__name__}")
    if len(wire) < min_len or (max_len is not None and len(wire) > max_len):
        raise MalformedMessage(f"{what}: expected {min_len}..{max_len} fields, got {len(wire)}")
    return list(wire)


# -- addresses ---------------------------------------------------------------------------


class OwnerAddress:
    """Where a driver or worker listens: TCP host/port, its Unix socket, and its id."""

    __slots__ = ("ip", "port", "unix_path", "worker_id", "_wire")

    def __init__(self, ip: str, port: int, unix_path: str, worker_id: bytes):
        self.ip = ip
        self.port = port
        self.unix_path = unix_path
        self.worker_id = worker_id
        self._wire = [ip, port, unix_path, worker_id]  # immutable: built once

    def to_wire(self) -> list:
        return self._wire

    @classmethod
    def from_wire(cls, wire: Any) -> OwnerAddress:
        # Every spec and ref names its owner: decode each owner once per process.
        try:
            known = _owners.get(wire[3])
        except (TypeError, IndexError, KeyError):
            known = None
        if known is not None and known.port == wire[1] and known.ip == wire[0] \
                and known.unix_path == wire[2]:
            return known
        ip, port, path, worker_id = _expect_list(wire, "OwnerAddress", 4, 4)
        if not isinstance(worker_id, bytes) or not isinstance(port, int):
            raise MalformedMessage("OwnerAddress: port must be an int and worker id bytes")
        if len(_owners) >= _MAX_OWNERS_CACHED:
            _owners.clear()
        address = _owners[worker_id] = cls(ip, port, path, worker_id)
        return address

    def host_port(self) -> str:
        return f"{self.ip}:{self.port}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OwnerAddress) and other.worker_id == self.worker_id \
            and other.ip == self.ip and other.port == self.port

    def __hash__(self) -> int:
        return hash(self.worker_id)

    def __reduce__(self):  # ObjectRefs pickle their owner
        return (OwnerAddress, (self.ip, self.port, self.unix_path, self.worker_id))

    def __repr__(self) -> str:
        return f"OwnerAddress({self.host_port()}, {self.worker_id.hex()[:8]})"


_owners: dict[bytes, OwnerAddress] = {}
_MAX_OWNERS_CACHED = 4096


class RayletAddress:
    """A raylet reachable over TCP (spillback target, affinity target, the head)."""

    __slots__ = ("node_id", "ip", "port")

    def __init__(self, node_id: str, ip: str, port: int):
        self.node_id = node_id  # hex
        self.ip = ip
        self.port = port

    def to_wire(self) -> list:
        return [self.node_id, self.ip, self.port]

    @classmethod
    def from_wire(cls, wire: Any) -> RayletAddress:
        node_id, ip, port = _expect_list(wire, "RayletAddress", 3, 3)
        return cls(node_id, ip, port)

    @classmethod
    def from_node_info(cls, node_id: str, info: dict) -> RayletAddress:
        """From a node-table entry (``ray:nodes``)."""
        return cls(node_id, info["node_ip"], info["raylet_port"])

    def __repr__(self) -> str:
        return f"RayletAddress({self.node_id[:8]} at {self.ip}:{self.port})"


# -- object values -----------------------------------------------------------------------


class Inline:
    """A value small enough to travel in messages: serializer metadata + bytes."""

    __slots__ = ("metadata", "data")

    def __init__(self, metadata: bytes, data: bytes):
        self.metadata = metadata
        self.data = data


class InPlasma:
    """A value in a node's shared-memory object store."""

    __slots__ = ("node_id", "size")

    def __init__(self, node_id: bytes, size: int):
        self.node_id = node_id
        self.size = size


ObjectValue = Inline | InPlasma
_VALUE_INLINE, _VALUE_PLASMA = 0, 1


def value_to_wire(value: ObjectValue) -> list:
    if isinstance(value, Inline):
        return [_VALUE_INLINE, value.metadata, value.data]
    return [_VALUE_PLASMA, value.node_id, value.size]


def value_from_wire(wire: Any) -> ObjectValue:
    kind, a, b = _expect_list(wire, "object value", 3, 3)
    if kind == _VALUE_INLINE:
        return Inline(a, b)
    if kind == _VALUE_PLASMA:
        return InPlasma(a, b)
    raise MalformedMessage(f"object value: unknown kind {kind!r}")


class ReturnObject:
    """One return value of a finished task, inline or stored in its node's store."""

    __slots__ = ("object_id", "value")

    def __init__(self, object_id: bytes, value: ObjectValue):
        self.object_id = object_id
        self.value = value

    def to_wire(self) -> list:
        v = self.value
        if isinstance(v, Inline):
            return [self.object_id, _VALUE_INLINE, v.metadata, v.data]
        return [self.object_id, _VALUE_PLASMA, v.node_id, v.size]

    @classmethod
    def from_wire(cls, wire: Any) -> ReturnObject:
        oid, kind, a, b = wire
        return cls(oid, Inline(a, b) if kind == _VALUE_INLINE else InPlasma(a, b))


class TaskDone:
    """A worker's report that a task finished (its returns, errors included).

    ``generator_items``: for a generator task (``num_returns`` streaming or dynamic), how
    many values it yielded before it returned or raised (None for other tasks). A
    streaming task's values travel ahead as ``GeneratorItem``s; a dynamic one's follow
    the first return in ``returns``."""

    __slots__ = ("task_id", "returns", "duration_s", "generator_items")

    def __init__(self, task_id: bytes, returns: list[ReturnObject], duration_s: float,
                 generator_items: int | None = None):
        self.task_id = task_id
        self.returns = returns
        self.duration_s = duration_s
        self.generator_items = generator_items

    def to_wire(self) -> list:
        wire = [self.task_id, [r.to_wire() for r in self.returns], self.duration_s]
        if self.generator_items is not None:
            wire.append(self.generator_items)
        return wire

    @classmethod
    def from_wire(cls, wire: Any) -> TaskDone:
        if type(wire) is not list or len(wire) != 3:
            wire = _expect_list(wire, "TaskDone", 3, 4)
        if len(wire) == 4:
            task_id, returns, duration_s, items = wire
            if not isinstance(items, int) or items < 0:
                raise MalformedMessage(f"TaskDone: bad generator item count {items!r}")
        else:
            task_id, returns, duration_s = wire
            items = None
        return cls(task_id, [ReturnObject.from_wire(r) for r in returns], duration_s, items)


class GeneratorItem:
    """Worker -> owner: value ``index`` (from 0) a streaming generator task yielded."""

    __slots__ = ("task_id", "index", "value")

    def __init__(self, task_id: bytes, index: int, value: ReturnObject):
        self.task_id = task_id
        self.index = index
        self.value = value

    def to_wire(self) -> list:
        return [self.task_id, self.index, self.value.to_wire()]

    @classmethod
    def from_wire(cls, wire: Any) -> GeneratorItem:
        task_id, index, value = _expect_list(wire, "GeneratorItem", 3, 3)
        if type(task_id) is not bytes or not isinstance(index, int) or index < 0:
            raise MalformedMessage(f"GeneratorItem: bad task id or index in {wire!r:.200}")
        return cls(task_id, index, ReturnObject.from_wire(value))


class CancelTask:
    """Owner -> worker running (or queueing) the task: stop it (``ray.cancel``).

    ``force``: kill the worker process; else raise ``TaskCancelledError`` in the task
    (or drop it before it starts). ``recursive``: cancel the tasks it submitted too."""

    __slots__ = ("task_id", "force", "recursive")

    def __init__(self, task_id: bytes, force: bool, recursive: bool):
        self.task_id = task_id
        self.force = force
        self.recursive = recursive

    def to_wire(self) -> list:
        return [self.task_id, self.force, self.recursive]

    @classmethod
    def from_wire(cls, wire: Any) -> CancelTask:
        task_id, force, recursive = _expect_list(wire, "CancelTask", 3, 3)
        if type(task_id) is not bytes or len(task_id) != 16:
            raise MalformedMessage("CancelTask: task id must be 16 bytes")
        return cls(task_id, bool(force), bool(recursive))


# -- task specs --------------------------------------------------------------------------


class InlineArg:
    """An argument value carried in the spec (``object_id``: the ref it came from, for
    the timeline's dependency arrows, when the owner resolved a ref before sending)."""

    __slots__ = ("metadata", "data", "object_id")

    def __init__(self, metadata: bytes, data: bytes, object_id: bytes | None = None):
        self.metadata = metadata
        self.data = data
        self.object_id = object_id

    def to_wire(self) -> list:
        if self.object_id is None:
            return [_VALUE_INLINE, self.metadata, self.data]
        return [_VALUE_INLINE, self.metadata, self.data, self.object_id]


class RefArg:
    """An argument passed by reference: the worker fetches it from ``owner``."""

    __slots__ = ("object_id", "owner")

    def __init__(self, object_id: bytes, owner: OwnerAddress):
        self.object_id = object_id
        self.owner = owner

    def to_wire(self) -> list:
        return [_VALUE_PLASMA, self.object_id, self.owner.to_wire()]


TaskArg = InlineArg | RefArg


def _arg_from_wire(wire: Any) -> TaskArg:
    if wire[0] == _VALUE_INLINE:
        return InlineArg(wire[1], wire[2], wire[3] if len(wire) > 3 else None)
    return RefArg(wire[1], OwnerAddress.from_wire(wire[2]))


class PlacementGroupCapture:
    """The group a task runs in (what its children inherit when ``capture_child_tasks``)."""

    __slots__ = ("group_id", "bundle_index", "capture_child_tasks")

    def __init__(self, group_id: str, bundle_index: int, capture_child_tasks: bool):
        self.group_id = group_id  # hex
        self.bundle_index = bundle_index
        self.capture_child_tasks = capture_child_tasks

    def to_wire(self) -> list:
        return [self.group_id, self.bundle_index, self.capture_child_tasks]

    @classmethod
    def from_wire(cls, wire: Any) -> PlacementGroupCapture:
        return cls(*_expect_list(wire, "PlacementGroupCapture", 3, 3))


class ActorCreation:
    """What an actor-creation task tells its worker about the actor it becomes
    (``concurrency_groups``: group name -> how many of its calls may run at once;
    ``name``: its name, if it has one, for ``RuntimeContext.get_actor_name()``)."""

    __slots__ = ("actor_id", "class_name", "max_concurrency", "is_async", "num_restarts",
                 "detached", "concurrency_groups", "name")

    def __init__(self, actor_id: bytes, class_name: str, max_concurrency: int, is_async: bool,
                 num_restarts: int = 0, detached: bool = False,
                 concurrency_groups: dict[str, int] | None = None, name: str | None = None):
        self.actor_id = actor_id
        self.class_name = class_name
        self.max_concurrency = max_concurrency
        self.is_async = is_async
        self.num_restarts = num_restarts
        self.detached = detached
        self.concurrency_groups = concurrency_groups
        self.name = name

    def to_wire(self) -> list:
        return [self.actor_id, self.class_name, self.max_concurrency, self.is_async,
                self.num_restarts, self.detached, self.concurrency_groups, self.name]

    @classmethod
    def from_wire(cls, wire: Any) -> ActorCreation:
        fields = _expect_list(wire, "ActorCreation", 8, 8)
        groups = fields[6]
        if groups is not None and not (isinstance(groups, dict) and all(
                isinstance(k, str) and isinstance(v, int) and v > 0 for k, v in groups.items())):
            raise MalformedMessage(f"ActorCreation: bad concurrency groups {groups!r:.200}")
        return cls(*fields)


class ActorExited:
    """An actor's worker -> its owner: the actor exits on purpose (``exit_actor()``,
    ``__ray_terminate__``), so it is not restarted; ``detail`` says why (for callers)."""

    __slots__ = ("actor_id", "detail")

    def __init__(self, actor_id: bytes, detail: str):
        self.actor_id = actor_id
        self.detail = detail

    def to_wire(self) -> list:
        return [self.actor_id, self.detail]

    @classmethod
    def from_wire(cls, wire: Any) -> ActorExited:
        actor_id, detail = _expect_list(wire, "ActorExited", 2, 2)
        if type(actor_id) is not bytes or not isinstance(detail, str):
            raise MalformedMessage("ActorExited: actor id must be bytes and detail a string")
        return cls(actor_id, detail)


class TaskKind:
    NORMAL, ACTOR_CREATION, ACTOR_METHOD = 0, 1, 2


# TaskSpec.num_returns of generator tasks (Ray 2.x's num_returns="dynamic"/"streaming"):
# one return (index 1) plus the yielded values at indexes 2, 3, ... (``item_id``).
NUM_RETURNS_DYNAMIC = -1
NUM_RETURNS_STREAMING = -2
_FIRST_RETURN = (1).to_bytes(4, "little")  # the index suffix of a task's first return


def item_id(task_id: bytes, index: int) -> bytes:
    """The object id of the ``index``-th value (from 0) a generator task yielded."""
    return task_id + (index + 2).to_bytes(4, "little")


class TaskSpec:
    """A task as its owner submits it and its worker runs it.

    ``function_id`` names the exported function (actor creation: the class);
    ``method``/``seq`` are set for actor calls; ``resource_ids`` is filled in per
    lease (the instances the worker holds, e.g. which GPUs); ``submitted_at`` is
    the owner's wall clock at submission (None with profiling off);
    ``enable_task_events`` False (the task option): neither the owner nor the worker
    records the task's state transitions (``ray.util.state`` does not list it);
    ``concurrency_group``: an actor call's ``.options(concurrency_group=)`` (None: its
    method's ``@ray.method`` group, or the default); ``generator_backpressure``: a
    streaming task pauses while that many of its values are not taken by its caller
    (0: never pauses).
    """

    __slots__ = ("task_id", "job_id", "function_id", "name", "args", "kwarg_names",
                 "num_returns", "owner", "kind", "resource_ids", "actor_id", "method", "seq",
                 "submitted_at", "max_calls", "placement_group", "actor_creation",
                 "enable_task_events", "concurrency_group", "generator_backpressure")

    def __init__(self, *, task_id: bytes, job_id: str, function_id: bytes, name: str,
                 args: list[TaskArg], kwarg_names: list[str], num_returns: int,
                 owner: OwnerAddress, kind: int = TaskKind.NORMAL,
                 resource_ids: dict | None = None, actor_id: bytes | None = None,
                 method: str | None = None, seq: int = 0, submitted_at: float | None = None,
                 max_calls: int = 0, placement_group: PlacementGroupCapture | None = None,
                 actor_creation: ActorCreation | None = None, enable_task_events: bool = True,
                 concurrency_group: str | None = None, generator_backpressure: int = 0):
        self.task_id = task_id
        self.job_id = job_id  # hex
        self.function_id = function_id
        self.name = name
        self.args = args
        self.kwarg_names = kwarg_names
        self.num_returns = num_returns
        self.owner = owner
        self.kind = kind
        self.resource_ids = resource_ids
        self.actor_id = actor_id
        self.method = method
        self.seq = seq
        self.submitted_at = submitted_at
        self.max_calls = max_calls
        self.placement_group = placement_group
        self.actor_creation = actor_creation
        self.enable_task_events = enable_task_events
        self.concurrency_group = concurrency_group
        self.generator_backpressure = generator_backpressure

    def return_ids(self) -> list[bytes]:
        task_id = self.task_id
        n = self.num_returns
        if n == 1 or n < 0:  # (a generator task: its one return; the yielded values
            return [task_id + _FIRST_RETURN]  # follow, see item_id)
        return [task_id + i.to_bytes(4, "little") for i in range(1, n + 1)]

    def is_generator(self) -> bool:
        return self.num_returns < 0

    def copy(self) -> TaskSpec:
        new = TaskSpec.__new__(TaskSpec)
        for name in TaskSpec.__slots__:
            setattr(new, name, getattr(self, name))
        new.args = list(self.args)
        return new

    def to_wire(self) -> list:
        pg, creation = self.placement_group, self.actor_creation
        args = self.args
        return [
            self.task_id, self.job_id, self.function_id, self.name,
            [a.to_wire() for a in args] if args else [], self.kwarg_names, self.num_returns,
            self.owner._wire, self.kind, self.resource_ids, self.actor_id, self.method,
            self.seq, self.submitted_at, self.max_calls,
            None if pg is None else pg.to_wire(),
            None if creation is None else creation.to_wire(), self.enable_task_events,
            self.concurrency_group, self.generator_backpressure,
        ]

    @classmethod
    def from_wire(cls, wire: Any) -> TaskSpec:
        if type(wire) is not list or len(wire) != 20:
            wire = _expect_list(wire, "TaskSpec", 20, 20)
        (task_id, job_id, function_id, name, args, kwarg_names, num_returns, owner, kind,
         resource_ids, actor_id, method, seq, submitted_at, max_calls, pg, creation,
         enable_task_events, concurrency_group, generator_backpressure) = wire
        if type(task_id) is not bytes or len(task_id) != 16:
            raise MalformedMessage("TaskSpec: task id must be 16 bytes")
        if not isinstance(num_returns, int) or num_returns < NUM_RETURNS_STREAMING:
            raise MalformedMessage(f"TaskSpec: bad num_returns {num_returns!r}")
        spec = cls.__new__(cls)
        spec.task_id = task_id
        spec.job_id = job_id
        spec.function_id = function_id
        spec.name = name
        spec.args = [_arg_from_wire(a) for a in args] if args else []
        spec.kwarg_names = kwarg_names
        spec.num_returns = num_returns
        spec.owner = OwnerAddress.from_wire(owner)
        spec.kind = kind
        spec.resource_ids = resource_ids
        spec.actor_id = actor_id
        spec.method = method
        spec.seq = seq
        spec.submitted_at = submitted_at
        spec.max_calls = max_calls
        spec.placement_group = None if pg is None else PlacementGroupCapture.from_wire(pg)
        spec.actor_creation = None if creation is None else ActorCreation.from_wire(creation)
        spec.enable_task_events = enable_task_events is not False
        if concurrency_group is not None and not isinstance(concurrency_group, str):
            raise MalformedMessage(f"TaskSpec: bad concurrency group {concurrency_group!r:.100}")
        spec.concurrency_group = concurrency_group
        if type(generator_backpressure) is not int or generator_backpressure < 0:
            raise MalformedMessage(f"TaskSpec: bad generator backpressure "
                                   f"{generator_backpressure!r:.100}")
        spec.generator_backpressure = generator_backpressure
        return spec

    def __repr__(self) -> str:
        return f"TaskSpec({self.name}, {self.task_id.hex()})"


# -- worker leases -----------------------------------------------------------------------


class LeaseRequest:
    """An owner's request to its (or a spilled-to) raylet for a worker.

    ``spilled``: already sent on once, so it is granted or queued there, never re-spilled.
    ``grant_or_reject``: spilled to a node that looked free; if it is busy now it answers
    ``LeaseRejected`` instead of queueing (the owner asks its own raylet again), so a
    stale view cannot park a request behind another lease (Ray's ``grant_or_reject``).
    ``strategy``: None or "SPREAD". ``runtime_env``: ``[env key, resolved env]`` for a
    worker dedicated to that env. ``retriable``: whether the owner would run the work
    again if the memory monitor killed it (a task's retries, an actor's restarts left;
    None: not said), so the monitor kills retriable work first.
    """

    __slots__ = ("shape", "job_id", "is_actor", "spilled", "owner", "detached", "strategy",
                 "runtime_env", "retriable", "grant_or_reject")

    def __init__(self, shape: dict, job_id: bytes, *, is_actor: bool = False,
                 spilled: bool = False, owner: OwnerAddress | None = None,
                 detached: bool = False, strategy: str | None = None,
                 runtime_env: list | None = None, retriable: bool | None = None,
                 grant_or_reject: bool = False):
        self.shape = shape
        self.job_id = job_id
        self.is_actor = is_actor
        self.spilled = spilled
        self.owner = owner
        self.detached = detached
        self.strategy = strategy
        self.runtime_env = runtime_env
        self.retriable = retriable
        self.grant_or_reject = grant_or_reject

    def to_wire(self) -> list:
        """The request's arguments (``call("request_lease", *request.to_wire())``)."""
        return [self.shape, self.job_id, self.is_actor, self.spilled,
                None if self.owner is None else self.owner.to_wire(), self.detached,
                self.strategy, self.runtime_env, self.retriable, self.grant_or_reject]

    @classmethod
    def from_wire(cls, wire: Any) -> LeaseRequest:
        fields = _expect_list(wire, "LeaseRequest", 5, 10)
        shape, job_id, is_actor, spilled, owner = fields[:5]
        detached, strategy, runtime_env, retriable, grant_or_reject = (
            fields[5:] + [False, None, None, None, False])[:5]
        if retriable not in (None, True, False):
            raise MalformedMessage(f"LeaseRequest: retriable must be a bool, got {retriable!r:.50}")
        if not isinstance(shape, dict):
            raise MalformedMessage(
                f"a lease shape must be a mapping of resource -> amount, got {shape!r}")
        if strategy not in (None, "SPREAD"):
            raise MalformedMessage(f"LeaseRequest: unknown strategy {strategy!r}")
        if runtime_env is not None:
            runtime_env = _expect_list(runtime_env, "LeaseRequest.runtime_env", 2, 2)
        return cls(shape, job_id if isinstance(job_id, bytes) else b"", is_actor=bool(is_actor),
                   spilled=bool(spilled),
                   owner=None if owner is None else OwnerAddress.from_wire(owner),
                   detached=bool(detached), strategy=strategy, runtime_env=runtime_env,
                   retriable=retriable, grant_or_reject=bool(grant_or_reject))


class LeaseGranted:
    """A worker is yours until you return it (``return_lease``)."""

    __slots__ = ("worker_id", "address", "resource_ids", "node_id")
    KIND = 0

    def __init__(self, worker_id: bytes, address: OwnerAddress, resource_ids: dict,
                 node_id: str):
        self.worker_id = worker_id
        self.address = address
        self.resource_ids = resource_ids
        self.node_id = node_id

    def to_wire(self) -> list:
        return [self.KIND, self.worker_id, self.address.to_wire(), self.resource_ids,
                self.node_id]


class LeaseSpillback:
    """Ask this other raylet instead (it has, or can ever have, the resources).
    ``grant_or_reject``: it looked free, so ask it with ``grant_or_reject`` set.
    ``room``: how many more requests of this shape the raylet's view of the cluster has
    free resources for (the owner may have that many more in flight)."""

    __slots__ = ("raylet", "grant_or_reject", "room")
    KIND = 1

    def __init__(self, raylet: RayletAddress, grant_or_reject: bool = False, room: int = 0):
        self.raylet = raylet
        self.grant_or_reject = grant_or_reject
        self.room = room

    def to_wire(self) -> list:
        return [self.KIND, self.raylet.to_wire(), self.grant_or_reject, self.room]


class LeaseRejected:
    """A ``grant_or_reject`` request found this node busy: ask your own raylet again."""

    __slots__ = ()
    KIND = 3

    def to_wire(self) -> list:
        return [self.KIND, None]


class LeaseFailed:
    """The request can never be granted; ``reason`` says why (one of the constants)."""

    __slots__ = ("reason", "message")
    KIND = 2
    PLACEMENT_GROUP_REMOVED = "placement_group_removed"
    RUNTIME_ENV_SETUP = "runtime_env_setup"

    def __init__(self, reason: str, message: str):
        self.reason = reason
        self.message = message

    def to_wire(self) -> list:
        return [self.KIND, self.reason, self.message]


LeaseReply = LeaseGranted | LeaseSpillback | LeaseFailed | LeaseRejected


def lease_reply_from_wire(wire: Any) -> LeaseReply:
    fields = _expect_list(wire, "LeaseReply", 2, 5)
    kind = fields[0]
    if kind == LeaseGranted.KIND:
        _, worker_id, address, resource_ids, node_id = fields
        return LeaseGranted(worker_id, OwnerAddress.from_wire(address), resource_ids or {},
                            node_id)
    if kind == LeaseSpillback.KIND:
        return LeaseSpillback(RayletAddress.from_wire(fields[1]),
                              bool(fields[2]) if len(fields) > 2 else False,
                              int(fields[3]) if len(fields) > 3 else 0)
    if kind == LeaseRejected.KIND:
        return LeaseRejected()
    if kind == LeaseFailed.KIND:
        return LeaseFailed(fields[1], fields[2])
    raise MalformedMessage(f"LeaseReply: unknown kind {kind!r}")


# -- worker deaths -----------------------------------------------------------------------


class WorkerKilled:
    """Raylet -> owner: why the raylet killed a leased worker (``get_worker_death_cause``).

    The raylet records it before it kills, so an owner that asks once the worker's
    connection dropped finds it."""

    __slots__ = ("worker_id", "reason", "message")
    OUT_OF_MEMORY = "OUT_OF_MEMORY"  # the memory monitor's kill

    def __init__(self, worker_id: bytes, reason: str, message: str):
        self.worker_id = worker_id
        self.reason = reason
        self.message = message

    def to_wire(self) -> list:
        return [self.worker_id, self.reason, self.message]

    @classmethod
    def from_wire(cls, wire: Any) -> WorkerKilled:
        worker_id, reason, message = _expect_list(wire, "WorkerKilled", 3, 3)
        if not isinstance(worker_id, bytes) or not isinstance(reason, str) \
                or not isinstance(message, str):
            raise MalformedMessage(f"WorkerKilled: bad field types in {wire!r:.200}")
        return cls(worker_id, reason, message)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WorkerKilled) and other.to_wire() == self.to_wire()

    def __hash__(self) -> int:
        return hash(self.worker_id)

    def __repr__(self) -> str:
        return f"WorkerKilled({self.worker_id.hex()[:8]}, {self.reason})"


# -- placement groups ------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class CreatePlacementGroup:
    """A process -> the head raylet (``create_placement_group``): record this group and
    place it. Answered with a ``PlacementGroupReply``; placing happens later (the group's
    record in the GCS says when it is CREATED)."""

    placement_group_id: str  # hex
    bundles: list[dict]  # resource name -> amount, one dict a bundle
    strategy: str  # one of placement.STRATEGIES (the manager checks)
    name: str  # "" for an unnamed group
    namespace: str
    job_id: str  # hex of the creating job ("" if unknown)
    detached: bool  # lifetime="detached": outlives its job
    pid: int  # the creating process (shown in the group table)
    soft_target: str | None = None  # STRICT_PACK's preferred node id (_soft_target_node_id)

    def to_wire(self) -> list:
        return [self.placement_group_id, self.bundles, self.strategy, self.name,
                self.namespace, self.job_id, self.detached, self.pid, self.soft_target]

    @classmethod
    def from_wire(cls, wire: Any) -> CreatePlacementGroup:
        (pg_hex, bundles, strategy, name, namespace, job_id, detached, pid,
         soft_target) = _expect_list(wire, "CreatePlacementGroup", 9, 9)
        if not all(isinstance(v, str) for v in (pg_hex, strategy, name, namespace, job_id)):
            raise MalformedMessage("CreatePlacementGroup: the group id, strategy, name, "
                                   "namespace and job id must be strings")
        if not isinstance(bundles, list | tuple) or not all(isinstance(b, dict)
                                                            for b in bundles):
            raise MalformedMessage("CreatePlacementGroup: bundles must be an array of maps")
        if soft_target is not None and not isinstance(soft_target, str):
            raise MalformedMessage("CreatePlacementGroup: soft_target must be a node id or nil")
        return cls(pg_hex, [dict(b) for b in bundles], strategy, name, namespace, job_id,
                   bool(detached), pid, soft_target)


@dataclasses.dataclass(frozen=True)
class PlacementGroupAccepted:
    """The head raylet did what was asked: the group is recorded (PENDING until placed),
    or removed (removing a removed group is accepted too)."""

    KIND: ClassVar[int] = 0

    def to_wire(self) -> list:
        return [self.KIND]


@dataclasses.dataclass(frozen=True)
class PlacementGroupRefused:
    """The head raylet refused the request: ``reason`` is one of the constants and
    ``message`` says what to do instead (the requester raises it as a ValueError)."""

    reason: str
    message: str
    KIND: ClassVar[int] = 1
    NAME_TAKEN: ClassVar[str] = "name_taken"  # a live group of that name exists
    UNKNOWN_GROUP: ClassVar[str] = "unknown_group"  # no group of that id was ever created

    def to_wire(self) -> list:
        return [self.KIND, self.reason, self.message]


PlacementGroupReply = PlacementGroupAccepted | PlacementGroupRefused


def placement_group_reply_from_wire(wire: Any) -> PlacementGroupReply:
    fields = _expect_list(wire, "PlacementGroupReply", 1, 3)
    kind = fields[0]
    if kind == PlacementGroupAccepted.KIND and len(fields) == 1:
        return PlacementGroupAccepted()
    if kind == PlacementGroupRefused.KIND and len(fields) == 3 and all(
            isinstance(v, str) for v in fields[1:]):
        return PlacementGroupRefused(fields[1], fields[2])
    raise MalformedMessage(f"PlacementGroupReply: not a reply: {wire!r:.100}")


# -- store statistics ------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class StoreStats:
    """Raylet -> GCS (in its heartbeat load record, read by ``ray memory``): one node's
    object store and spilling totals (or their sum over nodes)."""

    used_bytes: int = 0
    capacity_bytes: int = 0
    num_objects: int = 0
    primary_bytes: int = 0  # pinned primary copies in memory (what must stay)
    spilled_bytes: int = 0
    spilled_objects: int = 0
    spill_time_s: float = 0.0
    restored_bytes: int = 0
    restored_objects: int = 0
    restore_time_s: float = 0.0

    def to_wire(self) -> list:
        return list(dataclasses.astuple(self))

    @classmethod
    def from_wire(cls, wire: Any) -> StoreStats:
        fields = dataclasses.fields(cls)
        if not isinstance(wire, list) or len(wire) != len(fields) or not all(
                isinstance(v, int | float) and not isinstance(v, bool) for v in wire):
            raise MalformedMessage(f"not a StoreStats record: {wire!r:.100}")
        return cls(*wire)

    def __add__(self, other: StoreStats) -> StoreStats:
        return StoreStats(*(a + b for a, b in zip(self.to_wire(), other.to_wire(),
                                                   strict=True)))


__all__ = [
    "NUM_RETURNS_DYNAMIC", "NUM_RETURNS_STREAMING", "CancelTask", "GeneratorItem", "item_id",
    "ActorCreation", "ActorExited", "CreatePlacementGroup", "InPlasma", "Inline", "InlineArg",
    "LeaseFailed", "LeaseGranted", "LeaseRejected", "LeaseReply", "LeaseRequest",
    "LeaseSpillback",
    "MalformedMessage", "ObjectValue", "OwnerAddress", "PlacementGroupAccepted",
    "PlacementGroupCapture", "PlacementGroupRefused", "PlacementGroupReply", "RayletAddress",
    "RefArg", "ReturnObject", "StoreStats", "TaskArg", "TaskDone", "TaskKind", "TaskSpec",
    "WorkerKilled", "lease_reply_from_wire", "placement_group_reply_from_wire",
    "value_from_wire", "value_to_wire",
]
