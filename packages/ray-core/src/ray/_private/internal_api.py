"""Ray's ``ray._private.internal_api`` helpers that scripts and tests call.

``memory_summary`` is ``ray memory`` as a string: the live references table (unless
``stats_only``) and the object store stats across all nodes, including what was spilled
to and restored from disk (see ``memory_report``).
"""

from __future__ import annotations

_SORT_BY = {"OBJECT_SIZE": "size", "PID": "pid", "REFERENCE_TYPE": "type", "OWNER": "owner"}


def memory_summary(address: str | None = None, redis_password: str | None = None,
                   group_by: str = "NODE_ADDRESS", sort_by: str = "OBJECT_SIZE",
                   units: str = "B", line_wrap: bool = True, stats_only: bool = False,
                   num_entries: int | None = None) -> str:
    """What ``ray memory`` prints, for the connected cluster or the one at ``address``.

    ``sort_by``: OBJECT_SIZE, PID, REFERENCE_TYPE or OWNER. The table lists references
    process by process with sizes in readable units and is never wrapped, so
    ``group_by`` takes only NODE_ADDRESS, ``units`` only "B" and ``line_wrap`` changes
    nothing."""
    from ray._private import memory_report
    from ray._private import runtime as rt

    if group_by != "NODE_ADDRESS":
        raise ValueError(f"memory_summary(group_by={group_by!r}) is not supported: the "
                         "references are listed per process (group_by='NODE_ADDRESS')")
    if units != "B":
        raise ValueError(f"memory_summary(units={units!r}) is not supported: sizes are "
                         "printed in readable units (B, KiB, MiB, GiB); pass units='B'")
    if sort_by not in _SORT_BY:
        raise ValueError(f"memory_summary(sort_by={sort_by!r}): use one of {sorted(_SORT_BY)}")
    runtime = rt.maybe_current()
    if address is None and runtime is not None:
        return memory_report.memory_report(runtime.gcs_client(), stats_only=stats_only,
                                           sort_by=_SORT_BY[sort_by], num_entries=num_entries)
    from ray._private import auth
    from ray._private.driver import _resolve_address
    from ray._private.gcs import connect

    resolved = _resolve_address(address or "auto")
    if resolved is None:
        raise ConnectionError("memory_summary: no running Ray cluster was found; call "
                              "ray.init() first or pass address= of a cluster")
    gcs = connect(resolved, auth.resolve_secret(resolved, redis_password) or "")
    try:
        return memory_report.memory_report(gcs, stats_only=stats_only,
                                           sort_by=_SORT_BY[sort_by], num_entries=num_entries)
    finally:
        gcs.close()


__all__ = ["memory_summary"]
