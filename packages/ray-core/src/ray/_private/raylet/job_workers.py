"""What a node does about jobs ending. A worker serves one job (its imports and
globals), so when a job is over:

* its idle workers end on every node, not only on its driver's: the end is announced
  on ``CHANNEL_JOBS`` (``gcs.jobs.mark_job_finished``) and re-read from the job table
  after a pub/sub reconnect;
* each node starts unbound workers until ``num_prestart`` are idle or starting, as when
  it started, so the next job's first tasks find workers ready instead of every node
  forking at once (at 100 nodes on one machine a new driver's first round of 1,000
  tasks took 9 s, its first task starting after 4.4 s; with this 2.4 s). The same
  happens when any connected worker ends (a killed actor's, a crash);
* a head that starts over a GCS that outlived the previous head finishes the jobs of
  drivers on its machine that died with it (``adopt_orphans``, ``finish_orphans``).
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable

import psutil

from ray._private.gcs import keys
from ray._private.gcs.jobs import mark_job_finished
from ray._private.raylet.worker_pool import IDLE, STARTING, WorkerPool

logger = logging.getLogger(__name__)


def _process_alive(pid, started_by: float) -> bool:
    """Whether ``pid`` still runs the process that started by ``started_by`` (a pid
    reused since by a newer process does not count)."""
    if not pid:
        return False
    try:
        return psutil.Process(int(pid)).create_time() <= started_by + 1.0
    except (psutil.Error, ValueError):
        return False


class JobWorkers:
    def __init__(self, *, pool: WorkerPool, gcs, on_loop: Callable[..., None],
                 num_prestart: int, stopping: Callable[[], bool]):
        """``on_loop(fn, *args)``: run ``fn`` on the raylet's event loop (thread-safe)."""
        self._pool = pool
        self._gcs = gcs
        self._on_loop = on_loop
        self._num_prestart = num_prestart
        self._stopping = stopping
        self._orphans: set[str] = set()  # jobs of a previous head's drivers (adopt_orphans)

    def subscribe(self) -> None:
        self._gcs.subscribe_obj(keys.CHANNEL_JOBS, self._announced,
                                on_resync=self._read_finished)

    def _announced(self, _channel, job_hex: str) -> None:
        # (on the GCS listener thread)
        self._on_loop(self.end_idle_workers_of, {bytes.fromhex(job_hex)})

    def _read_finished(self) -> None:
        """After a pub/sub reconnect: a job that ended meanwhile was not announced here."""
        finished = {bytes.fromhex(job_hex) for job_hex, info in
                    self._gcs.hgetall_obj(keys.JOBS).items() if not info.get("alive", True)}
        self._on_loop(self.end_idle_workers_of, finished)

    def end_idle_workers_of(self, job_ids: set[bytes]) -> None:
        """These jobs are over: their idle workers here end, unbound ones replace them."""
        ended = False
        for w in list(self._pool.workers.values()):
            if w.state == IDLE and w.job_id in job_ids:
                self._pool.kill(w, signal.SIGTERM)
                self._pool.remove(w)
                ended = True
        if ended:
            self.restore_prestarted()

    def restore_prestarted(self) -> None:
        """Start unbound workers until ``num_prestart`` are idle or starting. For when
        connected workers end, not when they are leased (and not for one that dies
        starting, which would fork in a loop)."""
        if self._stopping():
            return
        ready = sum(1 for w in self._pool.workers.values()
                    if w.env_key is None and w.state in (IDLE, STARTING))
        for _ in range(self._num_prestart - ready):
            self._pool.start_worker()

    def job_finished(self, job_id: bytes) -> None:
        """The driver of ``job_id`` disconnected from this raylet. One that exits without
        ray.shutdown() (killed) cannot mark its job over itself; its raylet does, so what
        belongs to the job (placement groups, workers on other nodes) is cleaned up."""
        try:
            mark_job_finished(self._gcs, job_id.hex())
        except Exception:  # noqa: BLE001 - the next head's orphan check finishes it
            logger.debug("could not mark job %s finished", job_id.hex(), exc_info=True)

    def adopt_orphans(self, node_ip: str) -> None:
        """A head starting over a GCS that outlived the previous one: the live jobs whose
        drivers ran on this machine were attached to the old head's raylet (which would
        have marked them over when they exit); watch them from here."""
        self._orphans = {job_hex for job_hex, info in self._gcs.hgetall_obj(keys.JOBS).items()
                         if info.get("alive", True) and info.get("node_ip") == node_ip}
        self.finish_orphans()

    def finish_orphans(self) -> None:
        """Mark each adopted job over once its driver process is gone (every heartbeat)."""
        for job_hex in list(self._orphans):
            info = self._gcs.hget_obj(keys.JOBS, job_hex)
            if info is None or not info.get("alive", True):
                self._orphans.discard(job_hex)
                continue
            if _process_alive(info.get("driver_pid"), info.get("start_time", 0.0)):
                continue
            logger.info("job %s: its driver (pid %s) is gone; marking the job finished",
                        job_hex, info.get("driver_pid"))
            mark_job_finished(self._gcs, job_hex)
            self._orphans.discard(job_hex)


__all__ = ["JobWorkers"]
