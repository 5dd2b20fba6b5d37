"""Placement groups, the caller's side (public facade: ``ray.util.placement_group``).

Requests go to the head raylet's ``PlacementGroupManager`` (``create_placement_group``,
``remove_placement_group``); state is read from the GCS table it keeps. ``ready()``
is an object owned by this process, resolved when the group's state change to
CREATED arrives on ``ray:ch:placement_groups`` (one subscription per process), or
when the table is read again after that subscription's connection reconnects.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from typing import Any

from ray._private import runtime
from ray._private.gcs import keys
from ray._private.messages import (
    CreatePlacementGroup,
    PlacementGroupCapture,
    PlacementGroupRefused,
    RayletAddress,
    placement_group_reply_from_wire,
)
from ray._private.raylet.placement import PG_ID_BYTES, STRATEGIES
from ray._private.strategies import PlacementGroupSchedulingStrategy
from ray.exceptions import RayError

CREATED, REMOVED = "CREATED", "REMOVED"


class PlacementGroupID:
    def __init__(self, binary: bytes):
        self._binary = binary

    def binary(self) -> bytes:
        return self._binary

    def hex(self) -> str:
        return self._binary.hex()

    def __eq__(self, other):
        return isinstance(other, PlacementGroupID) and other._binary == self._binary

    def __hash__(self):
        return hash(self._binary)

    def __repr__(self):
        return f"PlacementGroupID({self.hex()})"


class PlacementGroup:
    """A handle to a placement group; pickles, so tasks and actors can receive it."""

    def __init__(self, id: PlacementGroupID, bundle_specs: list[dict] | None = None):
        self.id = id
        self._bundles = bundle_specs

    @staticmethod
    def empty() -> PlacementGroup:
        """The null group (Ray's "no placement group")."""
        return PlacementGroup(PlacementGroupID(b"\x00" * PG_ID_BYTES), [])

    @property
    def is_empty(self) -> bool:
        return self.id.binary() == b"\x00" * PG_ID_BYTES

    @property
    def bundle_specs(self) -> list[dict]:
        if self._bundles is None:
            record = _record(self.id.hex())
            self._bundles = [dict(b) for b in record["bundles"]] if record else []
        return self._bundles

    @property
    def bundle_count(self) -> int:
        return len(self.bundle_specs)

    def ready(self):
        """An ObjectRef that resolves to this group once all its bundles are reserved."""
        return _client().ready_ref(self)

    def wait(self, timeout_seconds: float | None = 30) -> bool:
        """True once the group is created; False if it is not within the timeout."""
        done, _ = runtime.current().wait([self.ready()], 1, timeout_seconds)
        return bool(done)

    def __reduce__(self):
        return (PlacementGroup, (self.id, self._bundles))

    def __eq__(self, other):
        return isinstance(other, PlacementGroup) and other.id == self.id

    def __hash__(self):
        return hash(self.id)

    def __repr__(self):
        return f"PlacementGroup(id={self.id.hex()}, bundles={self._bundles})"


def _client() -> PlacementGroupClient:
    return runtime.current().placement_groups()


def _record(pg_hex: str) -> dict | None:
    return _client().record(pg_hex)


def check_bundles(bundles) -> list[dict]:
    if not isinstance(bundles, list | tuple) or not bundles:
        raise ValueError(
            f"placement_group needs a non-empty list of bundles, e.g. [{{'CPU': 1}}, "
            f"{{'CPU': 1}}], got {bundles!r}.")
    out = []
    for i, bundle in enumerate(bundles):
        if not isinstance(bundle, dict):
            raise ValueError(f"bundle {i} must be a dict of resource -> amount, got {bundle!r}")
        for name, amount in bundle.items():
            if (not isinstance(name, str) or isinstance(amount, bool)
                    or not isinstance(amount, int | float) or amount < 0):
                raise ValueError(f"bundle {i}: {name!r}: {amount!r} must be a number >= 0")
            if amount > 1 and amount != int(amount):
                raise ValueError(f"bundle {i}: {name!r}={amount}: amounts above 1 must be "
                                 "whole numbers")
        clean = {k: v for k, v in bundle.items() if v}
        if not clean:
            raise ValueError(
                f"bundle {i} ({bundle!r}) reserves no resources; every bundle needs at least "
                "one positive amount, e.g. {'CPU': 1}.")
        out.append(clean)
    return out


def create(bundles, strategy: str = "PACK", name: str = "", lifetime: str | None = None,
           _soft_target_node_id: str | None = None) -> PlacementGroup:
    bundles = check_bundles(bundles)
    if _soft_target_node_id is not None and strategy != "STRICT_PACK":
        raise ValueError("_soft_target_node_id only works with strategy='STRICT_PACK' "
                         f"(got {strategy!r}), as in Ray.")
    if strategy not in STRATEGIES:
        raise ValueError(f"Unknown placement group strategy {strategy!r}; use one of "
                         f"{', '.join(STRATEGIES)}.")
    if lifetime not in (None, "detached", "non_detached"):
        raise ValueError(f"lifetime must be None or 'detached', got {lifetime!r}")
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a string, got {name!r}")
    return _client().create(bundles, strategy, name or "", lifetime == "detached",
                            _soft_target_node_id)


def remove(pg: PlacementGroup) -> None:
    if not isinstance(pg, PlacementGroup):
        raise TypeError(f"remove_placement_group needs a PlacementGroup, got {pg!r}")
    _client().remove(pg)


def get(name: str, namespace: str | None = None) -> PlacementGroup:
    return _client().get(name, namespace)


def current() -> PlacementGroup | None:
    group_id = runtime.current().identity().placement_group_id
    if group_id is None:
        return None
    return PlacementGroup(PlacementGroupID(bytes.fromhex(group_id)))


def table(pg: PlacementGroup | None = None) -> dict:
    return _client().table(pg)


def _table_entry(r: dict) -> dict:
    return {
        "placement_group_id": r["placement_group_id"],
        "name": r["name"],
        "bundles": {i: dict(b) for i, b in enumerate(r["bundles"])},
        "bundles_to_node_id": {i: n for i, n in enumerate(r["bundle_nodes"]) if n},
        "strategy": r["strategy"],
        "state": r["state"],
        "is_detached": r["detached"],
        "stats": {"creation_time": r["created_at"], "scheduled_time": r["scheduled_at"]},
    }


class PlacementGroupClient:
    """This process's side of placement groups: requests to the head raylet's manager,
    reads of the group table, and ``ready()`` refs resolved from the state channel (one
    subscription per process, made at the first ``ready()``)."""

    def __init__(self, *, gcs, head_raylet, objects, job):
        self._gcs = gcs
        self._head_raylet = head_raylet  # RayletAddress -> RpcPeer
        self._objects = objects
        self._job = job
        self._lock = threading.Lock()
        self._waiting: dict[str, list[tuple[bytes, PlacementGroup]]] = {}
        self._subscribed = False

    def record(self, pg_hex: str) -> dict | None:
        return self._gcs.hget_obj(keys.PLACEMENT_GROUPS, pg_hex)

    def _head(self):
        for node_id, info in self._gcs.hgetall_obj(keys.NODES).items():
            if info.get("is_head") and info.get("alive", True):
                return self._head_raylet(RayletAddress.from_node_info(node_id, info))
        raise RayError("the head node is not alive: placement groups need it (it runs the "
                       "placement group manager). Restart the cluster.")

    def create(self, bundles: list[dict], strategy: str, name: str, detached: bool,
               soft_target: str | None) -> PlacementGroup:
        pg_id = PlacementGroupID(os.urandom(PG_ID_BYTES))
        request = CreatePlacementGroup(
            placement_group_id=pg_id.hex(), bundles=bundles, strategy=strategy, name=name,
            namespace=self._job.namespace or "default", job_id=self._job.hex, detached=detached,
            pid=os.getpid(), soft_target=soft_target)
        reply = placement_group_reply_from_wire(self._head().call_sync(
            "create_placement_group", request.to_wire(), timeout=30))
        if isinstance(reply, PlacementGroupRefused):
            raise ValueError(reply.message)
        return PlacementGroup(pg_id, bundles)

    def remove(self, pg: PlacementGroup) -> None:
        reply = placement_group_reply_from_wire(self._head().call_sync(
            "remove_placement_group", pg.id.hex(), timeout=30))
        if isinstance(reply, PlacementGroupRefused):
            raise ValueError(reply.message)

    def get(self, name: str, namespace: str | None) -> PlacementGroup:
        namespace = namespace or self._job.namespace
        raw = self._gcs.get(keys.named_placement_group(namespace, name))
        record = self.record(raw.decode()) if raw is not None else None
        if record is None or record["state"] == REMOVED:
            raise ValueError(f"Failed to look up placement group {name!r} in namespace "
                             f"{namespace!r}: no such live group. Check the name (and "
                             "namespace=), or create it with placement_group(..., name=...).")
        return PlacementGroup(PlacementGroupID(bytes.fromhex(record["placement_group_id"])),
                              [dict(b) for b in record["bundles"]])

    def table(self, pg: PlacementGroup | None) -> dict:
        if pg is not None:
            record = self.record(pg.id.hex())
            return _table_entry(record) if record else {}
        return {pg_hex: _table_entry(r)
                for pg_hex, r in self._gcs.hgetall_obj(keys.PLACEMENT_GROUPS).items()}

    def ready_ref(self, pg: PlacementGroup):
        with self._lock:
            if not self._subscribed:
                self._gcs.subscribe_obj(keys.CHANNEL_PLACEMENT_GROUPS, self._on_change,
                                        confirm=True, on_resync=self._read_waited)
                self._subscribed = True
        ref = self._objects.new_return_refs(self._job.ids.next_task_id(), 1)[0]
        with self._lock:
            self._waiting.setdefault(pg.id.hex(), []).append((ref.binary(), pg))
        # Subscribed first, read second: no state change can fall in between.
        record = self.record(pg.id.hex())
        if record is None:
            with self._lock:
                self._waiting.pop(pg.id.hex(), None)
            raise ValueError(f"placement group {pg.id.hex()} does not exist in this cluster")
        self._on_change(None, record)
        return ref

    def _read_waited(self) -> None:
        """Resolve waiters from the table: after a pub/sub reconnect, for the changes
        published while the channel was down."""
        with self._lock:
            waited = list(self._waiting)
        for pg_hex in waited:
            record = self.record(pg_hex)
            if record is not None:
                self._on_change(None, record)

    def _on_change(self, _channel, msg: dict) -> None:
        state = msg.get("state")
        if state not in (CREATED, REMOVED):
            return
        with self._lock:
            waiting = self._waiting.pop(msg["placement_group_id"], [])
        for oid, pg in waiting:
            if state == CREATED:
                ret = self._objects.store_return(oid, pg)
                self._objects.store_value(ret.object_id, ret.value)
            else:
                self._objects.store_error([oid], RayError(
                    f"placement group {pg.id.hex()} was removed before all its bundles were "
                    "reserved"))


def wait_state(pg: PlacementGroup, state: str, timeout_s: float) -> bool:
    """Poll the table until the group reaches ``state`` (tests and removal checks)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        record = _record(pg.id.hex())
        if record and record["state"] == state:
            return True
        time.sleep(0.05)
    return False


def spec_entry(strategy: PlacementGroupSchedulingStrategy) -> PlacementGroupCapture:
    """What a task spec carries about its group (the worker's current group)."""
    return PlacementGroupCapture(strategy.placement_group.id.hex(),
                                 strategy.placement_group_bundle_index,
                                 strategy.placement_group_capture_child_tasks)


class Placement:
    """Where a submission goes: its options (moved into the running task's group when
    that group captures child tasks), the strategy left for the lease (None, "SPREAD" or
    node affinity), and the group capture its spec carries."""

    __slots__ = ("opts", "strategy", "group")

    def __init__(self, opts: Any, strategy: Any, group: PlacementGroupCapture | None):
        self.opts = opts
        self.strategy = strategy
        self.group = group


def place(opts: Any, running_in: PlacementGroupCapture | None) -> Placement:
    """Resolve a task's or actor's placement (one rule for both): a task running in a
    group that captures child tasks puts children without a strategy into it; a group
    strategy becomes the rewritten resource shape plus the spec's group capture."""
    strategy = opts.strategy()
    if strategy is None and running_in is not None and running_in.capture_child_tasks:
        opts = captured(opts, running_in)
        strategy = opts.strategy()
    if isinstance(strategy, PlacementGroupSchedulingStrategy):
        return Placement(opts, None, spec_entry(strategy))  # the rewritten shape steers it
    return Placement(opts, strategy, None)


def captured(opts: Any, current: PlacementGroupCapture) -> Any:
    """``opts`` moved into the running task's group (placement_group_capture_child_tasks)."""
    pg = PlacementGroup(PlacementGroupID(bytes.fromhex(current.group_id)))
    return dataclasses.replace(opts, scheduling_strategy=PlacementGroupSchedulingStrategy(
        pg, -1, placement_group_capture_child_tasks=True))
