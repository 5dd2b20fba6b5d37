"""The raylet's side of the memory monitor: the loop that samples the node's memory,
asks the pure ``MemoryMonitor`` which leased worker to kill, kills it, records why (an
owner asks ``get_worker_death_cause`` when the worker's connection drops, and retries on
the OOM budget) and tells the job's driver (as Ray shows its OOM kills)."""

from __future__ import annotations

import asyncio
import collections
import logging
import signal
import time
from collections.abc import Callable

from ray._private import messages
from ray._private.gcs import keys
from ray._private.raylet.memory_monitor import (
    OUT_OF_MEMORY,
    Kill,
    LeasedWorker,
    MemoryMonitor,
    MemoryUsage,
)
from ray._private.raylet.worker_pool import LEASED, WorkerPool

logger = logging.getLogger(__name__)

# Causes kept for get_worker_death_cause (an owner asks within moments of the death).
_MAX_CAUSES = 1000


class MemoryGuard:
    """Samples every ``period_s`` until ``stopping()``; kills what ``monitor`` says."""

    def __init__(self, *, pool: WorkerPool, gcs, monitor: MemoryMonitor, period_s: float,
                 read_usage: Callable[[], MemoryUsage], stopping: Callable[[], bool]):
        self._pool = pool
        self._gcs = gcs
        self._monitor = monitor
        self._period_s = period_s
        self._read_usage = read_usage
        self._stopping = stopping
        # Why workers this guard killed died, newest last.
        self._causes: collections.OrderedDict[bytes, messages.WorkerKilled] = \
            collections.OrderedDict()

    def death_cause(self, worker_id: bytes) -> messages.WorkerKilled | None:
        return self._causes.get(worker_id)

    async def run(self) -> None:
        while not self._stopping():
            await asyncio.sleep(self._period_s)
            try:
                usage = self._read_usage()
            except (OSError, ValueError, KeyError) as exc:
                logger.warning("memory monitor cannot read the node's memory: %s", exc)
                continue
            leased: list[LeasedWorker] = []
            for w in self._pool.workers.values():
                lease, pid = w.lease, w.pid
                if w.state == LEASED and lease is not None and pid:
                    leased.append(LeasedWorker(w.worker_id, pid,
                                               lease.get("granted_at", w.started_at),
                                               w.is_actor, lease.get("retriable")))
            kill = self._monitor.sampled(usage, leased, time.monotonic())
            if kill is not None:
                try:
                    self._kill(kill)
                except Exception:  # noqa: BLE001 - the monitor must outlive a failed kill
                    logger.exception("memory monitor: killing worker %s failed",
                                     kill.worker.worker_id.hex()[:8])

    def _kill(self, kill: Kill) -> None:
        worker = self._pool.workers.get(kill.worker.worker_id)
        if worker is None:
            return
        logger.warning("memory monitor: killing worker %s: %s", worker.worker_id.hex()[:8],
                       kill.message)
        self._causes[worker.worker_id] = messages.WorkerKilled(
            worker.worker_id, OUT_OF_MEMORY, kill.message)
        while len(self._causes) > _MAX_CAUSES:
            self._causes.popitem(last=False)
        self._pool.kill(worker, signal.SIGKILL)
        job_hex = worker.job_id.hex() if worker.job_id else ""
        try:  # shown by the driver, as Ray shows its OOM kills
            self._gcs.publish_obj(keys.channel_errors(job_hex), {
                "type": "out_of_memory", "message": kill.message, "time": time.time()})
        except Exception as exc:  # noqa: BLE001 - the kill stands; the log has the message
            logger.debug("could not publish the OOM kill to job %s: %s", job_hex, exc)


__all__ = ["MemoryGuard"]
