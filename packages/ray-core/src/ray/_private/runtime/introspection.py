"""Answer introspection requests with this process's live state.

``ray memory`` and the dashboard publish ``{"id", "what"}`` on
``ray:ch:introspect``; every driver and worker (they already hold a GCS pub/sub
connection) replies on ``ray:ch:introspect_reply:<id>`` with what it runs now
and, when asked for ``"refs"``, its reference table: each object id it knows,
why it is alive, how big it is, where it lives and who owns it. Nothing is
published unless somebody asks, so this costs nothing while nobody looks.
"""

from __future__ import annotations

import logging
import os

from ray._private.gcs import keys
from ray._private.runtime.memory_store import Inline, InPlasma

logger = logging.getLogger(__name__)

# Bounds one reply (a driver may hold millions of refs): the rest are counted.
MAX_REFS_REPORTED = 10_000


def install(core) -> None:
    core.gcs.subscribe_obj(keys.CHANNEL_INTROSPECT, lambda _ch, msg: _answer(core, msg))


def _answer(core, msg) -> None:
    if core.shutting_down or not isinstance(msg, dict) or "id" not in msg:
        return
    try:
        report = snapshot(core, want=msg.get("what") or ())
        core.gcs.publish_obj(keys.channel_introspect_reply(str(msg["id"])), report)
    except Exception:
        logger.debug("introspection reply failed", exc_info=True)


def snapshot(core, want=()) -> dict:
    executor = core.executor
    running = None
    if core.current_task_id != core.base_task_id:
        name = executor.actor_class_name if core.actor_id is not None else executor._title
        running = {"task_id": core.current_task_id.hex(), "name": name or ""}
    report = {
        "worker_id": core.worker_id.hex(),
        "pid": os.getpid(),
        "node_ip": core.node_ip,
        "node_id": core.node_id.hex(),
        "mode": core.mode,
        "job_id": core.job_hex,
        "actor_id": core.actor_id.hex() if core.actor_id is not None else None,
        "actor_class": executor.actor_class_name,
        "address": f"{core.address[0]}:{core.address[1]}",
        "running": running,
    }
    if "refs" in want:
        report["refs"], report["refs_not_reported"] = reference_table(core)
    return report


def reference_table(core, limit: int = MAX_REFS_REPORTED) -> tuple[list[dict], int]:
    table = core.refs.snapshot()
    rows = []
    own_address = f"{core.address[0]}:{core.address[1]}"
    for oid, info in table.items():
        if len(rows) >= limit:
            break
        entry = core.memory_store.get(oid)
        if isinstance(entry, Inline):
            size, location = len(entry.data) + len(entry.metadata), "inline"
        elif isinstance(entry, InPlasma):
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
                f"{owner[0]}:{owner[1]}" if owner else "unknown"),
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


__all__ = ["MAX_REFS_REPORTED", "install", "reference_table", "reference_type", "snapshot"]
