"""How many lease requests a task queue keeps in flight, without processes.

An owner keeps ``max_pending_lease_requests`` (8) requests per resource shape. On a large
cluster that ramps slowly: each lease is a few hops, 8 at a time. A spillback now says
how much room its raylet's view shows for the shape elsewhere, and the queue may keep
that many more requests in flight (at most ``max_lease_requests_for_room`` more), so
1,000 queued tasks reach 100 free nodes in one round of requests.
"""

from __future__ import annotations

from ray._private.config import build_config
from ray._private.messages import OwnerAddress, TaskKind, TaskSpec
from ray._private.runtime.task_ledger import PendingTask
from ray._private.runtime.task_submitter import TaskSubmitter


class _Leases:
    """A LeaseClient that only records requests (nothing is granted)."""

    def __init__(self):
        self.requests = []

    def request(self, shape, handler, on_worker_lost, **_kwargs):
        self.requests.append(handler)


class _Loop:
    def call_later(self, _delay, _fn, *_args):
        return None

    def cancel(self, _handle):
        pass


def _task(i: int) -> PendingTask:
    spec = TaskSpec(task_id=i.to_bytes(4, "big") * 6, job_id="01000000", function_id=b"f",
                    name="f", args=[], kwarg_names=[], num_returns=1,
                    owner=OwnerAddress("127.0.0.1", 1, "", b"w" * 28), kind=TaskKind.NORMAL)
    return PendingTask(spec, (("CPU", 1.0),), 0, [b"r%d" % i], [])


def _submitter(**config) -> tuple[TaskSubmitter, _Leases]:
    leases = _Leases()
    submitter = TaskSubmitter(leases=leases, ledger=None, objects=None, loop=_Loop(),
                              config=build_config(config), is_shutting_down=lambda: False)
    return submitter, leases


def test_a_queue_asks_for_more_leases_while_spillbacks_report_room():
    submitter, leases = _submitter()
    for i in range(1000):
        submitter.submit(_task(i), {"CPU": 1.0}, [])
    assert len(leases.requests) == 8  # max_pending_lease_requests
    queue = leases.requests[0]
    queue.lease_spilled(98)  # 98 more one-CPU nodes look free
    assert len(leases.requests) == 8 + 98
    queue.lease_spilled(97)  # less room than before: nothing more to ask for
    assert len(leases.requests) == 106
    queue.lease_spilled(0)
    queue.lease_failed(None)  # one request ends: no room now, so no new one
    assert len(leases.requests) == 106


def test_the_extra_requests_are_capped_and_never_exceed_the_queued_tasks():
    submitter, leases = _submitter(max_lease_requests_for_room=20)
    for i in range(1000):
        submitter.submit(_task(i), {"CPU": 1.0}, [])
    leases.requests[0].lease_spilled(500)
    assert len(leases.requests) == 8 + 20
    few, few_leases = _submitter()
    for i in range(12):
        few.submit(_task(i), {"CPU": 1.0}, [])
    few_leases.requests[0].lease_spilled(500)
    assert len(few_leases.requests) == 12  # one per queued task


def test_requests_beyond_the_queued_tasks_stop_travelling():
    submitter, leases = _submitter()
    for i in range(1000):
        submitter.submit(_task(i), {"CPU": 1.0}, [])
    queue = leases.requests[0]
    queue.lease_spilled(98)
    assert queue.lease_wanted()  # 106 requests for 1,000 tasks
    queue.pending.clear()  # the work ran out (ran elsewhere, or was cancelled)
    assert not queue.lease_wanted()
    queue.lease_failed(None)  # what the lease client does then: the count goes down
    assert queue.lease_requests == 105


# -- how many tasks wait at one worker --------------------------------------------------
class _Worker:
    """A leased worker's connection that records the tasks pushed to it."""

    def __init__(self):
        self.pushed: list = []

    def notify(self, method, specs):
        assert method == "push_tasks"
        self.pushed.extend(specs)


def _grant(queue, n: int) -> _Worker:
    from ray._private.messages import LeaseGranted
    from ray._private.runtime.lease_client import Lease

    worker = _Worker()
    grant = LeaseGranted(b"%027d" % n + b"w", OwnerAddress("127.0.0.1", 2, "", b"x" * 28),
                         {}, "ab" * 28)
    queue.lease_granted(Lease(grant, worker, raylet=None))
    return worker


def _queue_of(seconds: float | None, tasks: int):
    submitter, leases = _submitter()
    if seconds is not None:
        submitter._record_duration(b"f", seconds)
    for i in range(tasks):
        submitter.submit(_task(i), {"CPU": 1.0}, [])
    return leases.requests[0]


def test_short_tasks_wait_in_pairs_only_while_they_outnumber_the_workers_in_sight():
    queue = _queue_of(0.05, 1000)  # 8 requests in flight, no room reported
    assert len(_grant(queue, 1).pushed) == 2  # 1,000 tasks, 1 worker + 7 requests
    queue = _queue_of(0.05, 1000)
    queue.lease_spilled(2000)  # the cluster looks bigger than the queue
    assert len(_grant(queue, 1).pushed) == 1
    queue = _queue_of(0.05, 6)  # fewer tasks than requests: each goes to its own worker
    assert len(_grant(queue, 1).pushed) == 1


def test_slow_or_unknown_tasks_never_wait_behind_another():
    assert len(_grant(_queue_of(0.5, 1000), 1).pushed) == 1  # longer than _PAIR_UP_TO_S
    assert len(_grant(_queue_of(None, 1000), 1).pushed) == 1  # never ran yet
