"""``JobWorkers``' decisions, on a recording pool (the end-to-end behaviour, with real
nodes and processes, is in ``test_core_multinode.py``): a finished job's idle workers end
and only those; unbound workers are started back up to ``num_prestart``, counting those
idle or starting; nothing is started while the node stops."""

from ray._private.raylet.job_workers import JobWorkers
from ray._private.raylet.worker_pool import IDLE, LEASED, STARTING


class _Worker:
    def __init__(self, worker_id: bytes, state: str, job_id: bytes | None = None,
                 env_key: str | None = None):
        self.worker_id = worker_id
        self.state = state
        self.job_id = job_id
        self.env_key = env_key


class _Pool:
    def __init__(self, *workers: _Worker):
        self.workers = {w.worker_id: w for w in workers}
        self.killed: list[bytes] = []
        self.started = 0

    def kill(self, worker, sig) -> None:
        self.killed.append(worker.worker_id)

    def remove(self, worker) -> None:
        del self.workers[worker.worker_id]

    def start_worker(self) -> None:
        self.started += 1
        worker_id = f"new{self.started}".encode()
        self.workers[worker_id] = _Worker(worker_id, STARTING)


def _jobs(pool, num_prestart=2, stopping=False):
    return JobWorkers(pool=pool, gcs=None, on_loop=lambda fn, *a: fn(*a),
                      num_prestart=num_prestart, stopping=lambda: stopping)


def test_a_finished_jobs_idle_workers_end_and_unbound_ones_replace_them():
    pool = _Pool(_Worker(b"a", IDLE, b"J1"), _Worker(b"b", LEASED, b"J1"),
                 _Worker(b"c", IDLE, b"J2"), _Worker(b"d", IDLE, b"J1", env_key="env"))
    _jobs(pool, num_prestart=2).end_idle_workers_of({b"J1"})
    # The idle ones of J1 end (a leased one ends with its lease; env workers too).
    assert sorted(pool.killed) == [b"a", b"d"]
    # Ready afterwards: c (J2's, idle) and one new unbound worker make num_prestart.
    assert pool.started == 1


def test_nothing_is_started_when_no_worker_ended_or_the_node_stops():
    pool = _Pool(_Worker(b"a", LEASED, b"J1"))
    _jobs(pool).end_idle_workers_of({b"J2"})
    assert pool.killed == [] and pool.started == 0
    pool = _Pool(_Worker(b"a", IDLE, b"J1"))
    _jobs(pool, stopping=True).end_idle_workers_of({b"J1"})
    assert pool.killed == [b"a"] and pool.started == 0


def test_restore_counts_idle_and_starting_generic_workers():
    pool = _Pool(_Worker(b"a", STARTING), _Worker(b"b", IDLE, b"J1"),
                 _Worker(b"c", IDLE, env_key="env"), _Worker(b"d", LEASED, b"J1"))
    _jobs(pool, num_prestart=4).restore_prestarted()
    assert pool.started == 2  # a and b count; an env worker and a leased one do not
    _jobs(pool, num_prestart=4).restore_prestarted()
    assert pool.started == 2  # already there
