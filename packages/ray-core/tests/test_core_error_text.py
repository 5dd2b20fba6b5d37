"""Errors through tasks and actors as Ray prints and raises them: traceback text (header,
the user's frames with their source lines, nesting, failed arguments), errors that cannot
be unpickled by the caller, errors with registered serializers, BaseException,
KeyboardInterrupt, SystemExit and exception groups."""

from __future__ import annotations

import re

import pytest

import ray
from ray.exceptions import (
    ActorDiedError,
    RayTaskError,
    TaskCancelledError,
    UnserializableException,
    WorkerCrashedError,
)


@pytest.fixture(scope="module", autouse=True)
def cluster():
    ray.init(num_cpus=2)
    yield
    ray.shutdown()


def _scrub(text: str) -> str:
    """Ray's own normalisation for comparing traceback text."""
    text = re.sub(r"pid=[0-9]+,", "pid=XXX,", text.strip("\n"))
    text = re.sub(r"ip=[0-9.]+", "ip=YYY", text)
    text = re.sub(r"repr=.*\)", "repr=ZZZ)", text)
    text = re.sub(r"line \d+,", "line ZZ,", text)
    text = re.sub(r'"[^"]*"', '"FILE"', text)
    return re.sub(r"^\s+~*\^+~*\n", "", text, flags=re.MULTILINE)


def _fails(value):
    raise ValueError(value)


def test_task_traceback_shows_the_users_frames_with_source_lines():
    @ray.remote
    def compute():
        total = 3 + 4
        return _fails(total)

    with pytest.raises(ValueError) as info:
        ray.get(compute.remote())
    assert isinstance(info.value, RayTaskError)
    assert _scrub(str(info.value)) == (
        "ray::compute() (pid=XXX, ip=YYY)\n"
        '  File "FILE", line ZZ, in compute\n'
        "    return _fails(total)\n"
        '  File "FILE", line ZZ, in _fails\n'
        "    raise ValueError(value)\n"
        "ValueError: 7")


def test_actor_traceback_header_names_the_actor_and_its_repr():
    @ray.remote
    class Calculator:
        def compute(self):
            return _fails(7)

        def __repr__(self):
            return "Calculator(v1)"

    calc = Calculator.remote()
    with pytest.raises(ValueError) as info:
        ray.get(calc.compute.remote())
    first = str(info.value).split("\n")[0]
    assert first == (f"ray::Calculator.compute() (pid={info.value.pid}, ip={info.value.ip}, "
                     f"actor_id={calc._actor_id.hex()}, repr=Calculator(v1))")
    assert info.value.actor_id == calc._actor_id.hex()


def test_error_raised_again_by_a_nested_task_is_wrapped_in_its_own_error():
    @ray.remote
    def inner():
        return 1 / 0

    @ray.remote
    def outer():
        return ray.get(inner.remote())

    with pytest.raises(ZeroDivisionError) as info:
        ray.get(outer.remote())
    assert isinstance(info.value, RayTaskError)
    assert _scrub(str(info.value)) == (
        "ray::outer() (pid=XXX, ip=YYY)\n"
        '  File "FILE", line ZZ, in outer\n'
        "    return ray.get(inner.remote())\n"
        "ray.exceptions.RayTaskError(ZeroDivisionError): ray::inner() (pid=XXX, ip=YYY)\n"
        '  File "FILE", line ZZ, in inner\n'
        "    return 1 / 0\n"
        "ZeroDivisionError: division by zero")


def test_failed_argument_is_reported_as_such():
    @ray.remote
    def consume(a, b):
        return a, b

    @ray.remote
    def forward(x):
        return x

    @ray.remote
    def broken():
        raise ValueError("broken")

    with pytest.raises(ValueError) as info:
        ray.get(consume.remote(forward.remote(broken.remote()), broken.remote()))
    assert _scrub(str(info.value)) == (
        "ray::consume() (pid=XXX, ip=YYY)\n"
        "  At least one of the input arguments for this task could not be computed:\n"
        "ray.exceptions.RayTaskError: ray::forward() (pid=XXX, ip=YYY)\n"
        "  At least one of the input arguments for this task could not be computed:\n"
        "ray.exceptions.RayTaskError: ray::broken() (pid=XXX, ip=YYY)\n"
        '  File "FILE", line ZZ, in broken\n'
        '    raise ValueError("FILE")\n'
        "ValueError: broken")


class NoPickleError(OSError):
    def __init__(self, arg):  # no super().__init__: it cannot be rebuilt by unpickling
        pass


class CustomError(OSError):
    def __init__(self, msg):
        self.msg = msg

    def __str__(self):
        return f"message: {self.msg}"


def test_error_that_cannot_be_unpickled_arrives_as_unserializable_exception():
    @ray.remote
    def fail():
        raise NoPickleError("x")

    with pytest.raises(UnserializableException) as info:
        ray.get(fail.remote())
    text = str(info.value)
    assert text.startswith("Failed to deserialize exception.")
    assert "Original exception:\nray.exceptions.RayTaskError: ray::fail() (pid=" in text
    assert text.endswith("NoPickleError")


def test_registered_serializer_applies_to_errors():
    @ray.remote
    def fail():
        ray.util.register_serializer(
            CustomError, serializer=lambda e: {"msg": e.msg},
            deserializer=lambda state: CustomError(state["msg"] + " deserialized"))
        raise CustomError("message")

    try:
        with pytest.raises(CustomError) as info:
            ray.get(fail.remote())
        assert isinstance(info.value, RayTaskError)
        assert "message" in str(info.value) and "deserialized" not in str(info.value)
        assert "message deserialized" in str(info.value.cause)
    finally:
        ray.util.deregister_serializer(CustomError)


class MyBaseException(BaseException):
    pass


def test_base_exceptions_keyboard_interrupt_and_system_exit():
    @ray.remote
    def base():
        raise MyBaseException("rip")

    @ray.remote
    class Actor:
        def __init__(self, fail=False):
            if fail:
                raise MyBaseException("in init")

        def base(self):
            raise MyBaseException("rip")

        async def base_async(self):
            raise MyBaseException("rip")

    @ray.remote
    def interrupted():
        raise KeyboardInterrupt("stop")

    @ray.remote(max_retries=0)
    def exits():
        raise SystemExit("bye")

    with pytest.raises(MyBaseException):
        ray.get(base.remote())
    actor = Actor.remote()
    with pytest.raises(MyBaseException):
        ray.get(actor.base.remote())
    async_actor = Actor.options(max_concurrency=2).remote()
    with pytest.raises(MyBaseException):
        ray.get(async_actor.base_async.remote())
    with pytest.raises(ActorDiedError, match="MyBaseException"):
        ray.get(Actor.remote(fail=True).__ray_ready__.remote())
    with pytest.raises(TaskCancelledError):
        ray.get(interrupted.remote())
    with pytest.raises(WorkerCrashedError):
        ray.get(exits.remote())


def test_exception_groups_keep_their_sub_exceptions():
    group = ExceptionGroup("two", [ValueError("a"), TypeError("b")])

    @ray.remote
    def fail():
        raise group

    @ray.remote
    def plain():
        raise ValueError("plain")

    with pytest.raises(ExceptionGroup) as info:
        ray.get(fail.remote())
    assert isinstance(info.value, RayTaskError)
    assert [type(e) for e in info.value.exceptions] == [ValueError, TypeError]
    caught = []
    try:
        ray.get(fail.remote())
    except* ValueError as eg:
        caught.append(("value", len(eg.exceptions)))
    except* TypeError as eg:
        caught.append(("type", len(eg.exceptions)))
    assert caught == [("value", 1), ("type", 1)]
    try:
        ray.get(plain.remote())
    except* RayTaskError as eg:
        assert isinstance(eg.exceptions[0], ValueError)

    @ray.remote
    def base_group():
        raise BaseExceptionGroup("base", [MyBaseException("x")])

    with pytest.raises(RayTaskError):
        ray.get(base_group.remote())
