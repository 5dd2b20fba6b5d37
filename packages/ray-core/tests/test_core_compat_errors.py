"""ray.exceptions carries Ray 2.x's error names, bases and attributes; errors pickle;
RayTaskError prints the remote traceback as Ray does. Pure: no cluster."""

import pickle
import traceback

import pytest

import ray.exceptions as rex

# (name, bases it must have) as Ray 2.x defines them.
RAY_2X_TREE = [
    ("CrossLanguageError", (rex.RayError,)),
    ("TaskCancelledError", (rex.RayError,)),
    ("RayTaskError", (rex.RayError,)),
    ("LocalRayletDiedError", (rex.RayError,)),
    ("WorkerCrashedError", (rex.RayError,)),
    ("RayActorError", (rex.RayError,)),
    ("ActorDiedError", (rex.RayActorError,)),
    ("ActorUnavailableError", (rex.RayActorError,)),
    ("RaySystemError", (rex.RayError,)),
    ("AuthenticationError", (rex.RayError,)),
    ("UserCodeException", (rex.RayError,)),
    ("ObjectStoreFullError", (rex.RayError,)),
    ("OutOfDiskError", (rex.RayError,)),
    ("OutOfMemoryError", (rex.RayError,)),
    ("NodeDiedError", (rex.RayError,)),
    ("ObjectLostError", (rex.RayError,)),
    ("ObjectFetchTimedOutError", (rex.ObjectLostError,)),
    ("RpcError", (rex.RayError,)),
    ("ReferenceCountingAssertionError", (rex.ObjectLostError, AssertionError)),
    ("ObjectFreedError", (rex.ObjectLostError,)),
    ("OwnerDiedError", (rex.ObjectLostError,)),
    ("ObjectReconstructionFailedError", (rex.ObjectLostError,)),
    ("ObjectReconstructionFailedMaxAttemptsExceededError", (rex.ObjectLostError,)),
    ("ObjectReconstructionFailedLineageEvictedError", (rex.ObjectLostError,)),
    ("GetTimeoutError", (rex.RayError, TimeoutError)),
    ("PlasmaObjectNotAvailable", (rex.RayError,)),
    ("AsyncioActorExit", (rex.RayError,)),
    ("RuntimeEnvSetupError", (rex.RayError,)),
    ("TaskPlacementGroupRemoved", (rex.RayError,)),
    ("ActorPlacementGroupRemoved", (rex.RayError,)),
    ("PendingCallsLimitExceeded", (rex.RayError,)),
    ("TaskUnschedulableError", (rex.RayError,)),
    ("ActorUnschedulableError", (rex.RayError,)),
    ("ObjectRefStreamEndOfStreamError", (rex.RayError,)),
    ("OufOfBandObjectRefSerializationException", (rex.RayError,)),
    ("UnserializableException", (rex.RayError,)),
    ("ActorAlreadyExistsError", (ValueError, rex.RayError)),
    ("ActorHandleNotFoundError", (ValueError, rex.RayError)),
]


@pytest.mark.parametrize("name,bases", RAY_2X_TREE, ids=[n for n, _ in RAY_2X_TREE])
def test_error_tree_has_ray_2x_names_and_bases(name, bases):
    cls = getattr(rex, name)
    for base in bases:
        assert issubclass(cls, base), f"{name} must subclass {base.__name__}"
    assert name in rex.__all__
    assert name in rex.__doc__, f"{name} is missing from the tree drawn in the docstring"


EXAMPLES = [
    rex.RaySystemError("raylet died", "tb here"),
    rex.TaskCancelledError("0123abcd"),
    rex.TaskCancelledError(error_message="cancelled by the user"),
    rex.ObjectLostError("ab" * 14, "its node died"),
    rex.ObjectFreedError("ab" * 14),
    rex.OwnerDiedError("ab" * 14),
    rex.ObjectFetchTimedOutError("ab" * 14),
    rex.ObjectReconstructionFailedMaxAttemptsExceededError("ab" * 14),
    rex.ReferenceCountingAssertionError("ab" * 14),
    rex.RayActorError("it died", "cd" * 8, actor_init_failed=True, preempted=True),
    rex.ActorDiedError("it died", "cd" * 8),
    rex.ActorUnavailableError("restarting", "cd" * 8),
    rex.TaskUnschedulableError("node 12 is dead"),
    rex.ActorUnschedulableError("node 12 is dead"),
    rex.TaskPlacementGroupRemoved(),
    rex.ActorPlacementGroupRemoved("group 7 was removed"),
    rex.RuntimeEnvSetupError("pip failed"),
    rex.OutOfMemoryError("the node is at 96% memory"),
    rex.NodeDiedError("node 3 is dead"),
    rex.RpcError("deadline exceeded", rpc_code=4),
    rex.UnserializableException("Traceback ...\nNoPickle"),
    rex.ActorAlreadyExistsError("actor 'x' exists in namespace 'n'"),
    rex.ActorHandleNotFoundError("handle from an earlier session"),
    rex.WorkerCrashedError(),
    rex.PendingCallsLimitExceeded("10 calls pending"),
    rex.LocalRayletDiedError(),
    rex.UnsupportedFeatureError("f.bind(): Ray DAGs are not part of this project"),
]


@pytest.mark.parametrize("error", EXAMPLES, ids=lambda e: type(e).__name__)
def test_errors_pickle_with_their_type_attributes_and_message(error):
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert str(copy) == str(error)
    assert vars(copy) == vars(error)


def test_our_own_errors_are_in_the_tree_and_subclass_the_builtin_users_catch():
    assert issubclass(rex.UnsupportedFeatureError, rex.RayError)
    assert issubclass(rex.UnsupportedFeatureError, TypeError)
    assert "UnsupportedFeatureError" in rex.__all__
    assert "UnsupportedFeatureError" in rex.__doc__


def test_error_messages_follow_ray():
    assert str(rex.RaySystemError("boom")) == "System error: boom"
    assert str(rex.TaskCancelledError("ab12")) == "Task: ab12 was cancelled. "
    assert str(rex.TaskUnschedulableError("dead node")) == (
        "The task is not schedulable: dead node")
    assert str(rex.ActorUnschedulableError("dead node")) == (
        "The actor is not schedulable: dead node")
    assert str(rex.TaskPlacementGroupRemoved()) == (
        "The placement group corresponding to this task has been removed.")
    assert "Failed to set up runtime environment.\npip failed" == str(
        rex.RuntimeEnvSetupError("pip failed"))
    lost = str(rex.ObjectFreedError("ff" * 14))
    assert lost.startswith(f"Failed to retrieve object {'ff' * 14}.")
    assert "manually freed" in lost
    assert str(rex.UnserializableException("orig")).endswith("Original exception:\norig")


def test_actor_error_attributes_as_ray_reads_them():
    err = rex.ActorDiedError("gone", "ab" * 8, actor_init_failed=True)
    assert err.error_msg == "gone" and err.actor_id == "ab" * 8
    assert err.actor_init_failed and not err.preempted
    assert isinstance(err, rex.RayActorError)
    default = rex.RayActorError()
    assert "died" in default.error_msg and not default.actor_init_failed


def _traceback_of(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the test captures whatever it raised
        return exc, traceback.format_exc()
    raise AssertionError("fn did not raise")


def test_task_error_prints_ray_header_and_only_user_frames():
    def inner():
        raise ValueError(7)

    cause, tb = _traceback_of(inner)
    # An internal frame (ray's executor) as it appears in a worker's traceback.
    tb = tb.replace(
        "Traceback (most recent call last):\n",
        "Traceback (most recent call last):\n"
        '  File "/x/ray/_private/runtime/task_executor.py", line 9, in run\n'
        "    value = fn(*args)\n",
    )
    err = rex.RayTaskError("mod.outer.<locals>.f", tb, cause, 42, "10.0.0.1")
    text = str(err)
    lines = text.split("\n")
    assert lines[0] == "ray::f() (pid=42, ip=10.0.0.1)"
    assert "task_executor" not in text and "value = fn(*args)" not in text
    assert lines[-1] == "ValueError: 7"
    assert any("in inner" in line for line in lines)


def test_task_error_header_names_the_actor_when_given():
    cause, tb = _traceback_of(lambda: 1 / 0)
    err = rex.RayTaskError("A.f", tb, cause, 1, "1.2.3.4", proctitle="ray::A.f",
                           actor_repr="A(x=1)", actor_id="ab12")
    assert str(err).split("\n")[0] == "ray::A.f() (pid=1, ip=1.2.3.4, actor_id=ab12, repr=A(x=1))"
    dual = err.as_instanceof_cause()
    assert isinstance(dual, ZeroDivisionError) and isinstance(dual, rex.RayTaskError)
    assert type(dual).__name__ == "RayTaskError(ZeroDivisionError)"
    assert str(dual) == str(err)
    copy = pickle.loads(pickle.dumps(dual))
    assert type(copy) is type(dual) and str(copy) == str(dual) and copy._actor_id == "ab12"


def test_task_error_marks_failed_dependencies():
    tb = ("Traceback (most recent call last):\n"
          '  File "/x/ray/_private/runtime/task_executor.py", line 3, in '
          "raise_if_dependency_failed\n"
          "    raise arg\n"
          "ray.exceptions.RayTaskError: ray::b() (pid=1, ip=1.1.1.1)\n"
          "ValueError: b failed")
    text = str(rex.RayTaskError("f", tb, ValueError("b failed"), 1, "1.1.1.1"))
    assert text.split("\n")[:2] == [
        "ray::f() (pid=1, ip=1.1.1.1)",
        "  At least one of the input arguments for this task could not be computed:",
    ]


class ReadOnlyArgsError(Exception):
    def __init__(self, msg):
        self._msg = msg

    @property
    def args(self):
        return (self._msg,)

    def __str__(self):
        return self._msg


def test_dual_error_of_a_cause_with_read_only_args_carries_the_cause():
    cause, tb = _traceback_of(lambda: (_ for _ in ()).throw(ReadOnlyArgsError("boom")))
    dual = rex.RayTaskError("f", tb, cause, 1, "1.1.1.1").as_instanceof_cause()
    assert isinstance(dual, ReadOnlyArgsError) and isinstance(dual, rex.RayTaskError)
    assert dual.args == (dual.cause,)
    assert "boom" in str(dual)


def test_actor_died_error_from_a_failed_constructor():
    cause, tb = _traceback_of(lambda: 1 / 0)
    task_error = rex.RayTaskError("A.__init__", tb, cause, 1, "1.1.1.1",
                                  proctitle="ray::A.__init__", actor_repr="A", actor_id="ee")
    err = rex.ActorDiedError.from_task_error(task_error)
    assert err.actor_init_failed and err.actor_id == "ee"
    assert str(err).startswith("The actor died because of an error raised in its creation "
                               "task, ray::A.__init__() (pid=1, ip=1.1.1.1, actor_id=ee")
