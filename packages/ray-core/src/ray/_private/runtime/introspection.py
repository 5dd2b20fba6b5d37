"""Answer introspection requests with this process's live state.

``ray memory`` and the dashboard publish ``{"id", "what"}`` on
``ray:ch:introspect``; every driver and worker (they already hold a GCS pub/sub
connection) replies on ``ray:ch:introspect_reply:<id>`` with what it runs now
and, when asked for ``"refs"``, its reference table: each object id it knows,
why it is alive, how big it is, where it lives and who owns it. Nothing is
published unless somebody asks, so this costs nothing while nobody looks. The asker
sends a request that not everybody answered again (``"round"`` counts the tries, and
each reply carries its round); a process that answered it already replies only
``{"worker_id", "again": True}`` (see ``state.introspect_counted``).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

from ray._private.gcs import keys
from ray._private.messages import Inline, InPlasma, OwnerAddress
from ray._private.runtime.context import JobState, TaskContext
from ray._private.runtime.objects import ObjectClient
from ray._private.runtime.reference_counter import ReferenceCounter

logger = logging.getLogger(__name__)

# Bounds one reply (a driver may hold millions of refs): the rest are counted.
MAX_REFS_REPORTED = 10_000
_ANSWERED_REMEMBERED = 64


class Introspection:
    def __init__(self, *, gcs, refs: ReferenceCounter, objects: ObjectClient,
                 context: TaskContext, job: JobState, address: OwnerAddress, node_id: bytes,
                 mode: str, is_shutting_down: Callable[[], bool]):
        self._gcs = gcs
        self._refs = refs
        self._objects = objects
        self._context = context
        self._job = job
        self._address = address
        self._node_id = node_id
        self._mode = mode
        self._is_shutting_down = is_shutting_down
        # Requests answered lately (oldest first), to answer a repeat of one briefly.
        self._answered: dict[str, None] = {}
        self._answered_lock = threading.Lock()

    def install(self) -> None:
        self._gcs.subscribe_obj(keys.CHANNEL_INTROSPECT, self._answer)

    def _answer(self, _channel, msg) -> None:
        if self._is_shutting_down() or not isinstance(msg, dict) or "id" not in msg:
            return
        request_id = str(msg["id"])
        try:
            if request_id in self._answered:
                # The request again (not everybody answered it): say only that this
                # process is still here, its report went out already.
                report = {"worker_id": self._address.worker_id.hex(), "again": True}
            else:
                report = self.snapshot(want=msg.get("what") or ())
            report["round"] = msg.get("round", 0)
            self._gcs.publish_obj(keys.channel_introspect_reply(request_id), report)
        except Exception:  # noqa: BLE001 - the asker times out; this process carries on
            logger.debug("introspection reply failed", exc_info=True)
            return
        with self._answered_lock:
            self._answered[request_id] = None
            while len(self._answered) > _ANSWERED_REMEMBERED:
                del self._answered[next(iter(self._answered))]

    def snapshot(self, want=()) -> dict:
        ctx = self._context
        running = None
        if ctx.running_task():
            name = ctx.actor_class if ctx.actor_id is not None else ctx.task_name
            running = {"task_id": ctx.task_id.hex(), "name": name or ""}
        report = {
            "worker_id": self._address.worker_id.hex(),
            "pid": os.getpid(),
            "node_ip": self._address.ip,
            "node_id": self._node_id.hex(),
            "mode": self._mode,
            "job_id": self._job.hex,
            "actor_id": ctx.actor_id.hex() if ctx.actor_id is not None else None,
            "actor_class": ctx.actor_class,
            "address": self._address.host_port(),
            "running": running,
        }
        if "refs" in want:
            report["refs"], report["refs_not_reported"] = self.reference_table()
        return report

    def reference_table(self, limit: int = MAX_REFS_REPORTED) -> tuple[list[dict], int]:
        table = self._refs.snapshot()
        rows: list[dict] = []
        own_address = self._address.host_port()
        for oid, info in table.items():
            if len(rows) >= limit:
                break
            entry = self._objects.entry(oid)
            if type(entry) is Inline:
                size, location = len(entry.data) + len(entry.metadata), "inline"
            elif type(entry) is InPlasma:
                size, location = entry.size, f"plasma:{entry.node_id.hex()[:8]}"
            else:
                size, location = None, "pending" if info["owned"] else "remote"
            owner = info.get("owner")
            rows.append({
                "object_id": oid.hex(),
                "reference_type": reference_type(info),
                "size_bytes": size,
                "location": location,
                "owned": info["owned"],
                "owner": own_address if info["owned"] else (
                    owner.host_port() if owner is not None else "unknown"),
                "local_refs": info["local"],
                "submitted_task_refs": info["submitted"],
                "borrowers": info["borrowers"],
            })
        return rows, max(0, len(table) - len(rows))


def reference_type(info: dict) -> str:
    """Ray's names for why an object is alive, strongest reason first."""
    if info["local"] > 0:
        return "LOCAL_REFERENCE"
    if info["submitted"] > 0:
        return "USED_BY_PENDING_TASK"
    if info["borrowers"]:
        return "BORROWED"
    if info["escaped"]:
        return "CAPTURED_IN_OBJECT"
    return "PINNED_IN_MEMORY"


__all__ = ["MAX_REFS_REPORTED", "Introspection", "reference_type"]
