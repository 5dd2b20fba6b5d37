"""Placement groups, the caller's side (public facade: ``ray.util.placement_group``).

Requests go to the head raylet's ``PlacementGroupManager`` (``create_placement_group``,
``remove_placement_group``); state is read from the GCS table it keeps. ``ready()``
is an object owned by this process, resolved when the group's state change to
CREATED arrives on ``ray:ch:placement_groups`` (one subscription per process).
"""

from __future__ import annotations

import os
import threading
import time

from ray._private.gcs import keys
from ray._private.raylet.placement import PG_ID_BYTES, STRATEGIES
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
        return _watcher().ready_ref(self)

    def wait(self, timeout_seconds: float = 30) -> bool:
        """True once the group is created; False if it is not within the timeout."""
        import ray

        done, _ = ray.wait([self.ready()], timeout=timeout_seconds)
        return bool(done)

    def __reduce__(self):
        return (PlacementGroup, (self.id, self._bundles))

    def __eq__(self, other):
        return isinstance(other, PlacementGroup) and other.id == self.id

    def __hash__(self):
        return hash(self.id)

    def __repr__(self):
        return f"PlacementGroup(id={self.id.hex()}, bundles={self._bundles})"


def _core():
    from ray._private import runtime

    core = runtime.current()
    if not hasattr(core, "gcs"):
        raise RayError("Placement groups need a cluster: they are not available in "
                       "local_mode; call ray.init() without local_mode=True.")
    return core


def _record(pg_hex: str) -> dict | None:
    return _core().gcs.hget_obj(keys.PLACEMENT_GROUPS, pg_hex)


def _head_raylet(core):
    for node_id, info in core.gcs.hgetall_obj(keys.NODES).items():
        if info.get("is_head") and info.get("alive", True):
            return core.raylet_peer_for(
                {"node_id": node_id, "address": [info["node_ip"], info["raylet_port"]]})
    raise RayError("the head node is not alive: placement groups need it (it runs the "
                   "placement group manager). Restart the cluster.")


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
    core = _core()
    pg_id = PlacementGroupID(os.urandom(PG_ID_BYTES))
    reply = _head_raylet(core).call_sync("create_placement_group", {
        "placement_group_id": pg_id.hex(), "bundles": bundles, "strategy": strategy,
        "name": name or "", "namespace": core.namespace, "job_id": core.job_hex,
        "detached": lifetime == "detached", "pid": os.getpid(),
        "soft_target": _soft_target_node_id,
    }, timeout=30)
    if "error" in reply:
        raise ValueError(reply["error"])
    return PlacementGroup(pg_id, bundles)


def remove(pg: PlacementGroup) -> None:
    if not isinstance(pg, PlacementGroup):
        raise TypeError(f"remove_placement_group needs a PlacementGroup, got {pg!r}")
    core = _core()
    reply = _head_raylet(core).call_sync("remove_placement_group", pg.id.hex(), timeout=30)
    if "error" in reply:
        raise ValueError(f"{reply['error']}: it was never created in this cluster")


def get(name: str, namespace: str | None = None) -> PlacementGroup:
    core = _core()
    raw = core.gcs.get(keys.named_placement_group(namespace or core.namespace, name))
    record = _record(raw.decode()) if raw is not None else None
    if record is None or record["state"] == REMOVED:
        raise ValueError(f"Failed to look up placement group {name!r} in namespace "
                         f"{namespace or core.namespace!r}: no such live group. Check the "
                         "name (and namespace=), or create it with placement_group(..., "
                         "name=...).")
    return PlacementGroup(PlacementGroupID(bytes.fromhex(record["placement_group_id"])),
                          [dict(b) for b in record["bundles"]])


def current() -> PlacementGroup | None:
    from ray._private import runtime

    core = runtime.current()
    info = getattr(core, "placement_group", None)
    if info is None:
        return None
    return PlacementGroup(PlacementGroupID(bytes.fromhex(info[0])))


def table(pg: PlacementGroup | None = None) -> dict:
    core = _core()
    if pg is not None:
        record = core.gcs.hget_obj(keys.PLACEMENT_GROUPS, pg.id.hex())
        return _table_entry(record) if record else {}
    return {pg_hex: _table_entry(r)
            for pg_hex, r in core.gcs.hgetall_obj(keys.PLACEMENT_GROUPS).items()}


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


class _Watcher:
    """Resolves this process's ``ready()`` refs from the state-change channel."""

    def __init__(self, core):
        self.core = core
        self.lock = threading.Lock()
        self.waiting: dict[str, list[tuple[bytes, PlacementGroup]]] = {}
        core.gcs.subscribe_obj(keys.CHANNEL_PLACEMENT_GROUPS, self._on_change, confirm=True)

    def ready_ref(self, pg: PlacementGroup):
        core = self.core
        ref = core.new_return_refs(core.ids.next_task_id(), 1)[0]
        with self.lock:
            self.waiting.setdefault(pg.id.hex(), []).append((ref.binary(), pg))
        # Subscribed first, read second: no state change can fall in between.
        record = core.gcs.hget_obj(keys.PLACEMENT_GROUPS, pg.id.hex())
        if record is None:
            with self.lock:
                self.waiting.pop(pg.id.hex(), None)
            raise ValueError(f"placement group {pg.id.hex()} does not exist in this cluster")
        self._on_change(None, record)
        return ref

    def _on_change(self, _channel, msg) -> None:
        state = msg.get("state")
        if state not in (CREATED, REMOVED):
            return
        with self.lock:
            waiting = self.waiting.pop(msg["placement_group_id"], [])
        core = self.core
        for oid, pg in waiting:
            if state == CREATED:
                core.store_results([core.store_return(oid, pg)])
            else:
                from ray._private.runtime import serialization as ser
                from ray._private.runtime.memory_store import Inline

                err = RayError(f"placement group {pg.id.hex()} was removed before all its "
                               "bundles were reserved")
                small = ser.serialize_error(err)
                core.memory_store.put(oid, Inline(small.metadata, small.data))


_current_watcher: _Watcher | None = None
_watcher_lock = threading.Lock()


def _watcher() -> _Watcher:
    global _current_watcher
    core = _core()
    with _watcher_lock:
        if _current_watcher is None or _current_watcher.core is not core:  # a new ray.init
            _current_watcher = _Watcher(core)
        return _current_watcher


def wait_state(pg: PlacementGroup, state: str, timeout_s: float) -> bool:
    """Poll the table until the group reaches ``state`` (tests and removal checks)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        record = _record(pg.id.hex())
        if record and record["state"] == state:
            return True
        time.sleep(0.05)
    return False


def spec_entry(strategy) -> list:
    """What a task spec carries about its group (the worker's current group)."""
    return [strategy.placement_group.id.hex(), strategy.placement_group_bundle_index,
            strategy.placement_group_capture_child_tasks]


def captured(opts, current: list):
    """``opts`` moved into the running task's group (placement_group_capture_child_tasks)."""
    import dataclasses

    from ray._private.strategies import PlacementGroupSchedulingStrategy

    pg = PlacementGroup(PlacementGroupID(bytes.fromhex(current[0])))
    return dataclasses.replace(opts, scheduling_strategy=PlacementGroupSchedulingStrategy(
        pg, -1, placement_group_capture_child_tasks=True))
