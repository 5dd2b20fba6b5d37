"""Task events as the runtime records them: the ``enable_task_events`` option (functions,
actor classes, ``@ray.method``, a method call's ``.options()``) and the owner's "arguments
ready" transition (``PENDING_ARGS_AVAIL`` -> ``PENDING_NODE_ASSIGNMENT``), read back
through ``ray.util.state`` on a live cluster."""

import time

import pytest

import ray
from ray.util import state

SMALL_STORE = 128 * 1024**2


@pytest.fixture(scope="module")
def cluster():
    ctx = ray.init(num_cpus=2, resources={"gate": 1}, object_store_memory=SMALL_STORE)
    yield ctx
    ray.shutdown()


def _task(ref_or_id):
    task_id = ref_or_id if isinstance(ref_or_id, str) else ref_or_id.task_id().hex()
    return state.get_task(task_id)


def _wait_for(predicate, what, timeout_s=60.0):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _finished(ref):
    # FINISHED comes from the worker, the submission from the owner: each flushes on its
    # own period, so wait for both before reading the task's history.
    return _wait_for(lambda: (t := _task(ref)) is not None and t.state == "FINISHED"
                     and t.creation_time_ms is not None and t,
                     f"task {ref} to be listed FINISHED with its submission")


@ray.remote
def shown():
    return 1


@ray.remote(enable_task_events=False)
def hidden():
    return 2


@ray.remote(enable_task_events=False, max_retries=0)
def hidden_failure():
    raise ValueError("not recorded")


def test_tasks_with_enable_task_events_false_are_not_recorded(cluster):
    refs = {"shown": shown.remote(), "hidden": hidden.remote(),
            "shown_hidden": shown.options(enable_task_events=False).remote(),
            "hidden_shown": hidden.options(enable_task_events=True).remote(),
            "failure": hidden_failure.remote()}
    assert ray.get([refs[k] for k in ("shown", "hidden", "shown_hidden", "hidden_shown")]) \
        == [1, 2, 1, 2]
    with pytest.raises(ray.exceptions.RayTaskError):
        ray.get(refs["failure"])
    last = _finished(refs["hidden_shown"])
    assert _finished(refs["shown"]).name == "shown" and last.name == "hidden"
    time.sleep(0.5)  # two more flush periods: anything recorded would be listed now
    for key in ("hidden", "shown_hidden", "failure"):
        assert _task(refs[key]) is None, key
    names = [t.name for t in state.list_tasks(filters=[("job_id", "=", last.job_id)])]
    assert "hidden_failure" not in names


@ray.remote
class Recorded:
    def work(self):
        return "work"

    @ray.method(enable_task_events=False)
    def quiet(self):
        return "quiet"


@ray.remote(enable_task_events=False)
class Unrecorded:
    def work(self):
        return "work"

    @ray.method(enable_task_events=True)
    def loud(self):
        return "loud"


def test_actor_option_method_decorator_and_call_options(cluster):
    recorded, unrecorded = Recorded.remote(), Unrecorded.remote()
    refs = {"work": recorded.work.remote(), "quiet": recorded.quiet.remote(),
            "call_off": recorded.work.options(enable_task_events=False).remote(),
            "call_on": recorded.quiet.options(enable_task_events=True).remote(),
            "u_work": unrecorded.work.remote(), "u_loud": unrecorded.loud.remote()}
    assert ray.get(list(refs.values())) == ["work", "quiet", "work", "quiet", "work", "loud"]
    assert _finished(refs["work"]).name == "Recorded.work"
    assert _finished(refs["call_on"]).name == "Recorded.quiet"
    assert _finished(refs["u_loud"]).name == "Unrecorded.loud"
    time.sleep(0.5)
    for key in ("quiet", "call_off", "u_work"):
        assert _task(refs[key]) is None, key
    creations = {t.name for t in state.list_tasks(
        filters=[("type", "=", "ACTOR_CREATION_TASK")])}
    assert "Recorded.__init__" in creations and "Unrecorded.__init__" not in creations
    # A handle passed to a task carries each method's setting.

    @ray.remote
    def call_through(handle):
        return [handle.work.remote().task_id().hex(), handle.loud.remote().task_id().hex()]

    via_work, via_loud = ray.get(call_through.remote(unrecorded))
    _wait_for(lambda: (t := _task(via_loud)) is not None and t.state == "FINISHED", "loud")
    time.sleep(0.5)
    assert _task(via_work) is None


def test_bad_enable_task_events_values_are_refused(cluster):
    with pytest.raises(TypeError, match="enable_task_events"):
        shown.options(enable_task_events="no")
    with pytest.raises(TypeError, match="enable_task_events"):
        Recorded.options(enable_task_events=0)
    with pytest.raises(TypeError, match="enable_task_events"):
        ray.method(enable_task_events="off")
    with pytest.raises(TypeError, match="enable_task_events"):
        Recorded.remote().work.options(enable_task_events=None)


@ray.remote
def slow(seconds):
    time.sleep(seconds)
    return 1


@ray.remote(num_cpus=0, resources={"gate": 1})
def gated(x):
    return x + 1


@ray.remote(num_cpus=0, resources={"gate": 1})
class Gate:
    def ping(self):
        return "held"


@ray.remote(num_cpus=0)
class Adder:
    def add(self, x):
        return x + 10


def _states(task_id):
    return [e["state"] for e in _task(task_id).events]


def test_a_task_waiting_for_its_arguments_is_pending_args_then_node_assignment(cluster):
    gate = Gate.remote()  # holds the only "gate": gated() cannot be placed while it lives
    assert ray.get(gate.ping.remote()) == "held"
    adder = Adder.remote()
    ray.get(adder.add.remote(0))
    arg = slow.remote(3)
    ref, call = gated.remote(arg), adder.add.remote(arg)
    first = _wait_for(lambda: _task(ref), "gated() to be listed")
    assert first.state == "PENDING_ARGS_AVAIL", first
    assert _task(call).state == "PENDING_ARGS_AVAIL"
    # Its argument exists now, but no node has a free "gate": waiting for a node.
    _wait_for(lambda: _task(ref).state == "PENDING_NODE_ASSIGNMENT", "arguments ready")
    assert ray.get(call) == 11
    ray.kill(gate)
    assert ray.get(ref) == 2
    _finished(ref)
    _finished(call)
    assert _states(ref) == ["PENDING_ARGS_AVAIL", "PENDING_NODE_ASSIGNMENT", "RUNNING",
                            "FINISHED"]
    assert _states(call) == ["PENDING_ARGS_AVAIL", "PENDING_NODE_ASSIGNMENT", "RUNNING",
                             "FINISHED"]
    # A task with no reference arguments starts at PENDING_NODE_ASSIGNMENT.
    plain = shown.remote()
    ray.get(plain)
    assert _states(_finished(plain).task_id) == ["PENDING_NODE_ASSIGNMENT", "RUNNING",
                                                 "FINISHED"]
