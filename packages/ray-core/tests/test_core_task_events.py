"""Task events: recording, the bounded GCS list and merging (pure; an in-memory GCS)."""

import itertools

import pytest

from ray._private import task_events as te
from ray._private.gcs import InMemoryGcs, keys
from ray.exceptions import RayTaskError, WorkerCrashedError

NODE, WORKER = b"n" * 20, b"w" * 20


_CLOCK = itertools.count(1000.0, 1.0)  # one clock for every recorder: events are ordered


def _recorder(**kwargs):
    kwargs.setdefault("node_id", NODE)
    kwargs.setdefault("worker_id", WORKER)
    return te.BufferedTaskEvents(clock=lambda: next(_CLOCK), **kwargs)


def _submit(rec, task_id, name="f", **kwargs):
    kwargs.setdefault("kind", 0)
    kwargs.setdefault("job_hex", "01000000")
    kwargs.setdefault("actor_id", None)
    kwargs.setdefault("parent_task_id", b"p" * 24)
    rec.submitted(task_id, name=name, **kwargs)


def test_a_task_goes_pending_running_finished_with_times_node_and_worker():
    gcs, owner, worker = InMemoryGcs(), _recorder(), _recorder()
    _submit(owner, b"t1")
    owner.flush(gcs)
    (task,) = te.read_tasks(gcs).values()
    assert task.state == "PENDING_NODE_ASSIGNMENT" and task.name == "f"
    worker.started(b"t1", "f")
    worker.flush(gcs)  # still running at the flush: a RUNNING event goes out
    assert te.read_tasks(gcs)[b"t1".hex()].state == "RUNNING"
    worker.finished(b"t1")
    assert worker.flush(gcs) == 1  # the RUNNING event is not sent twice
    task = te.read_tasks(gcs)[b"t1".hex()]
    assert task.state == "FINISHED" and task.type == "NORMAL_TASK"
    assert task.node_id == NODE.hex() and task.worker_id == WORKER.hex()
    assert task.start_time_ms < task.end_time_ms and task.creation_time_ms < task.start_time_ms
    assert task.parent_task_id == (b"p" * 24).hex() and task.job_id == "01000000"
    assert [e["state"] for e in task.events] == ["PENDING_NODE_ASSIGNMENT", "RUNNING", "FINISHED"]


def test_out_of_order_arrival_never_moves_a_state_backwards():
    owner, worker = _recorder(), _recorder()
    worker.started(b"t", "f")
    worker.finished(b"t")
    _submit(owner, b"t", waits_for_args=True)
    owner.args_ready(b"t")
    events = te.decode(worker.drain()[0] + owner.drain()[0])  # the worker flushed first
    task = te.merge(events)[b"t".hex()]
    assert task.state == "FINISHED" and task.name == "f" and task.creation_time_ms is not None


def test_a_task_waiting_for_arguments_is_pending_args_until_the_owner_resolves_them():
    gcs, owner = InMemoryGcs(), _recorder()
    _submit(owner, b"t", waits_for_args=True)
    owner.flush(gcs)
    assert te.read_tasks(gcs)[b"t".hex()].state == "PENDING_ARGS_AVAIL"
    owner.args_ready(b"t")
    owner.flush(gcs)
    task = te.read_tasks(gcs)[b"t".hex()]
    assert task.state == "PENDING_NODE_ASSIGNMENT"
    assert [e["state"] for e in task.events] == ["PENDING_ARGS_AVAIL", "PENDING_NODE_ASSIGNMENT"]


def test_failures_on_the_worker_and_in_the_owner_carry_ray_error_types():
    owner, worker = _recorder(), _recorder()
    _submit(owner, b"app")
    worker.started(b"app", "f")
    try:
        raise ValueError("boom")
    except ValueError as exc:
        worker.failed(b"app", exc)
    _submit(owner, b"crash")
    owner.failed(b"crash", WorkerCrashedError())
    _submit(owner, b"upstream")
    worker.started(b"upstream", "g")
    worker.failed(b"upstream", RayTaskError("f", "tb", ValueError("x")))
    tasks = te.merge(te.decode(owner.drain()[0] + worker.drain()[0]))
    app = tasks[b"app".hex()]
    assert app.state == "FAILED" and app.error_type == "APPLICATION_ERROR"
    assert "ValueError: boom" in app.error_message and app.node_id == NODE.hex()
    crash = tasks[b"crash".hex()]
    assert crash.error_type == "WORKER_DIED" and crash.node_id is None
    assert tasks[b"upstream".hex()].error_type == "APPLICATION_ERROR"


def test_a_retry_is_the_same_row_with_the_latest_attempt():
    owner, worker = _recorder(), _recorder()
    _submit(owner, b"t", attempt=0)
    _submit(owner, b"t", attempt=1)
    worker.started(b"t", "f")
    worker.finished(b"t")
    stale = _recorder()
    _submit(stale, b"t", attempt=0)  # the first attempt's event arriving last
    tasks = te.merge(te.decode(owner.drain()[0] + worker.drain()[0] + stale.drain()[0]))
    assert len(tasks) == 1 and tasks[b"t".hex()].attempt_number == 1
    assert tasks[b"t".hex()].state == "FINISHED"


def test_actor_tasks_have_their_type_and_actor_id():
    owner = _recorder()
    _submit(owner, b"c", name="A", kind=1, actor_id=b"a" * 16)
    _submit(owner, b"m", name="A.f", kind=2, actor_id=b"a" * 16)
    tasks = te.merge(te.decode(owner.drain()[0]))
    assert tasks[b"c".hex()].type == "ACTOR_CREATION_TASK"
    assert tasks[b"m".hex()].type == "ACTOR_TASK" and tasks[b"m".hex()].actor_id == (b"a" * 16).hex()


def test_an_actor_call_finished_before_its_submission_arrived_keeps_the_class_name():
    owner, worker = _recorder(), _recorder()
    worker.started(b"m", "A.f")  # the worker names it Class.method
    worker.finished(b"m")
    early = te.merge(te.decode(worker.drain()[0]))[b"m".hex()]
    assert early.state == "FINISHED" and early.name == "A.f"  # not cut down to "f"
    _submit(owner, b"m", name="f", kind=2, actor_id=b"a" * 16)  # the owner knows the method
    worker.started(b"m", "A.f")
    worker.finished(b"m")
    task = te.merge(te.decode(worker.drain()[0] + owner.drain()[0]))[b"m".hex()]
    assert task.type == "ACTOR_TASK" and task.name == task.func_or_class_name == "A.f"


def test_events_in_the_same_millisecond_are_listed_in_state_order():
    record = te.TaskRecord(task_id="t")
    record._advance("RUNNING", 5)  # the worker's event merged first
    record._advance("PENDING_NODE_ASSIGNMENT", 5)
    record._advance("FINISHED", 6)
    assert [e["state"] for e in record.events] == ["PENDING_NODE_ASSIGNMENT", "RUNNING",
                                                   "FINISHED"]


def test_the_buffer_and_the_gcs_list_are_bounded():
    gcs = InMemoryGcs()
    rec = _recorder(capacity=10, max_events_in_gcs=25)
    for i in range(15):
        _submit(rec, b"t%d" % i)
    assert len(rec) == 10 and rec.dropped == 5
    assert rec.flush(gcs) == 10 and rec.dropped == 0
    for round_ in range(3):
        for i in range(10):
            _submit(rec, b"r%d-%d" % (round_, i))
        rec.flush(gcs)
    assert gcs.llen(keys.TASK_EVENTS) == 25
    assert b"r2-9".hex() in te.read_tasks(gcs)  # the newest kept, the oldest gone
    assert b"t0".hex() not in te.read_tasks(gcs)


def test_bad_bounds_and_unknown_elements():
    with pytest.raises(ValueError, match="task_events_max_buffered"):
        te.BufferedTaskEvents(node_id=NODE, worker_id=WORKER, capacity=0)
    with pytest.raises(ValueError, match="task_events_max_in_gcs"):
        te.BufferedTaskEvents(node_id=NODE, worker_id=WORKER, max_events_in_gcs=0)
    assert te.decode([b"\xc1", b"\x01"]) == []  # not msgpack / not an event: skipped


def test_no_task_events_records_nothing():
    gcs, rec = InMemoryGcs(), te.NoTaskEvents()
    _submit(rec, b"t")
    rec.started(b"t", "f")
    rec.finished(b"t")
    assert rec.flush(gcs) == 0 and te.read_tasks(gcs) == {}
