"""The end of a job, as every part records it: the driver at ``ray.shutdown()``, the
raylet a driver was attached to when it disconnects, a head that finds a dead driver's
job still running."""

from __future__ import annotations

import time

from ray._private.gcs import keys


def mark_job_finished(gcs, job_hex: str) -> None:
    """Mark ``job_hex`` over in the job table (once: the first end time stays) and
    announce it on ``CHANNEL_JOBS``, so every raylet ends its idle workers of the job
    (a worker serves one job) and starts unbound ones in their place."""
    info = gcs.hget_obj(keys.JOBS, job_hex)
    if info is not None and info.get("alive", True):
        info.update(alive=False, end_time=time.time())
        gcs.hset_obj(keys.JOBS, job_hex, info)
    # Announced even when already marked: the driver announces at ray.shutdown() and its
    # raylet again once it disconnects, and a lease the driver returned just before its
    # announcement may reach a raylet after it (a worker that went idle late then ends
    # at the second).
    gcs.publish_obj(keys.CHANNEL_JOBS, job_hex)


__all__ = ["mark_job_finished"]
