"""ray.util.state: the call's timeout, partial answers (a worker that does not answer, task
events dropped by a full buffer) and call sites (RAY_record_task_actor_creation_sites)."""

import os
import signal
import time
import types

import pytest

import ray
from ray._private import state as private_state
from ray._private import task_events
from ray._private.gcs import InMemoryGcs, keys
from ray._private.messages import OwnerAddress
from ray._private.runtime.context import TaskContext
from ray._private.runtime.introspection import Introspection
from ray.util import state
from ray.util.state import RayStateApiException
from ray.util.state._source import GcsStateSource
from ray.util.state.common import ListOptions, StateResource

SMALL_STORE = 64 * 1024**2


@ray.remote
def square(x):
    return x * x


@ray.remote
class Holder:
    def pid(self):
        return os.getpid()


def test_dropped_task_events_are_counted_in_the_gcs_and_reported_as_missing_tasks():
    gcs = InMemoryGcs()
    owner = task_events.BufferedTaskEvents(node_id=b"n" * 20, worker_id=b"w" * 20, capacity=2)
    for i in range(5):
        owner.submitted(bytes([i]) * 24, name="f", kind=0, job_hex="01000000", actor_id=None,
                        parent_task_id=None)
    owner.flush(gcs)
    owner.submitted(b"x" * 24, name="f", kind=0, job_hex="01000000", actor_id=None,
                    parent_task_id=None)
    owner.flush(gcs)  # nothing dropped this time: the process's total stays 3
    assert task_events.dropped_in_gcs(gcs) == 3
    result = GcsStateSource(gcs).list(StateResource.TASKS, ListOptions())
    assert len(result.result) == result.num_after_truncation == 3
    assert result.total == 3 + 3 and result.num_status_task_events_dropped == 3
    assert any("num_status_task_events_dropped" in w for w in result.warnings)


class _CountsOneMore(InMemoryGcs):
    """Pub/sub that counts one process more than answers: one that got the request and
    then exited (``rounds=1``), or one alive that never answers (every round)."""

    def __init__(self, rounds: int | None):
        super().__init__()
        self.rounds = rounds
        self.requests = 0

    def publish(self, channel, message):
        reached = super().publish(channel, message)
        if channel == keys.CHANNEL_INTROSPECT:
            self.requests += 1
            if self.rounds is None or self.requests <= self.rounds:
                return reached + 1
        return reached


def _answering_process(gcs, worker_id: bytes) -> Introspection:
    process = Introspection(
        gcs=gcs, refs=None, objects=None, context=TaskContext(b"t" * 24),
        job=types.SimpleNamespace(hex="01000000"),
        address=OwnerAddress("127.0.0.1", 1, "", worker_id), node_id=b"n" * 28,
        mode="worker", is_shutting_down=lambda: False)
    process.install()
    return process


def test_a_process_that_exits_after_it_was_asked_does_not_make_the_answer_partial():
    gcs = _CountsOneMore(rounds=1)  # it got the first request, then exited (ray.kill)
    _answering_process(gcs, b"a" * 28)
    started = time.monotonic()
    reports, asked = private_state.introspect_counted(gcs, timeout_s=10)
    assert time.monotonic() - started < 2  # asked again at once, not at the deadline
    assert asked == len(reports) == 1 and reports[0]["worker_id"] == "61" * 28
    assert set(reports[0]) >= {"pid", "mode", "running"} and "round" not in reports[0]
    assert gcs.requests == 2  # the process that answered the first says only "still here"


def test_a_process_alive_that_never_answers_is_missing_until_the_deadline():
    gcs = _CountsOneMore(rounds=None)  # counted by every request, answers none
    _answering_process(gcs, b"a" * 28)
    started = time.monotonic()
    reports, asked = private_state.introspect_counted(gcs, timeout_s=1.5)
    assert 1.4 <= time.monotonic() - started < 3
    assert len(reports) == 1 and asked == 2
    result = GcsStateSource(gcs).list(StateResource.WORKERS, ListOptions(timeout=1))
    assert "1 of 2 drivers and workers did not answer" in result.partial_failure_warning
    assert len(result.result) == 1


@pytest.fixture
def cluster_with_call_sites(monkeypatch):
    monkeypatch.setenv("RAY_record_task_actor_creation_sites", "true")
    ray.init(num_cpus=2, object_store_memory=SMALL_STORE)
    yield
    ray.shutdown()


def test_call_sites_are_recorded_with_ray_record_task_actor_creation_sites(
        cluster_with_call_sites):
    ref = square.remote(3)  # CALL-SITE-OF-SQUARE
    holder = Holder.remote()  # CALL-SITE-OF-HOLDER
    assert ray.get(ref) == 9 and ray.get(holder.pid.remote())
    deadline = time.time() + 10
    while time.time() < deadline:
        task = state.get_task(ref.task_id().hex())
        if task is not None and task.call_site:
            break
        time.sleep(0.2)
    assert "CALL-SITE-OF-SQUARE" in task.call_site and __file__ in task.call_site
    assert "ray/_private" not in task.call_site  # ray's own frames are left out
    (actor,) = state.list_actors(filters=[("class_name", "=", "Holder")], detail=True)
    assert "CALL-SITE-OF-HOLDER" in actor.call_site
    (obj,) = state.list_objects(filters=[("object_id", "=", ref.hex())])
    assert obj.call_site == "disabled"  # as in Ray without RAY_record_ref_creation_sites


def test_a_worker_that_does_not_answer_makes_the_answer_partial_after_the_timeout():
    ray.init(num_cpus=2, object_store_memory=SMALL_STORE)
    try:
        holder = Holder.remote()
        pid = ray.get(holder.pid.remote())
        assert state.list_workers(timeout=5)  # every process answers: a full answer
        os.kill(pid, signal.SIGSTOP)  # the actor's worker can answer nothing now
        try:
            for timeout in (1.0, 2.5):  # the call's deadline, not a fixed wait
                started = time.monotonic()
                with pytest.raises(RayStateApiException, match="did not answer"):
                    state.list_workers(timeout=timeout)
                assert timeout - 0.1 <= time.monotonic() - started < timeout + 2.0
            with pytest.warns(UserWarning, match="did not answer"):
                workers = state.list_workers(timeout=1.0, raise_on_missing_output=False)
            assert workers and pid not in {w.pid for w in workers}
            with pytest.raises(RayStateApiException, match="did not answer"):
                state.summarize_objects(timeout=1.0)
            started = time.monotonic()  # an actor's pid is a bounded lookup: still listed
            (row,) = state.list_actors(filters=[("class_name", "=", "Holder")], timeout=10)
            assert row.state == "ALIVE" and row.pid is None
            assert time.monotonic() - started < 5
        finally:
            os.kill(pid, signal.SIGCONT)
        assert pid in {w.pid for w in state.list_workers(timeout=10)}
    finally:
        ray.shutdown()


def test_task_events_dropped_by_a_full_buffer_are_reported_or_raised():
    ray.init(num_cpus=2, object_store_memory=SMALL_STORE, include_dashboard=True,
             _system_config={"task_events_max_buffered": 4})
    try:
        ray.get([square.remote(i) for i in range(40)])  # 40 submissions within one flush
        error, deadline = "", time.time() + 10
        while not error and time.time() < deadline:  # until the driver's flush landed
            try:
                state.summarize_tasks()
            except RayStateApiException as exc:
                error = str(exc)
            time.sleep(0.2)
        assert "num_status_task_events_dropped" in error and "task_events_max_buffered" in error
        with pytest.raises(RayStateApiException, match="num_status_task_events_dropped"):
            state.list_tasks()
        for address in (None, ray.get_webui_url()):
            with pytest.warns(UserWarning, match="task events were dropped"):
                rows = state.list_tasks(address=address, raise_on_missing_output=False,
                                        limit=1000)
            assert 0 < len(rows) < 40 + 1
            with pytest.warns(UserWarning, match="num_status_task_events_dropped"):
                summary = state.summarize_tasks(address=address, raise_on_missing_output=False)
            assert summary["cluster"]["summary"]
    finally:
        ray.shutdown()
