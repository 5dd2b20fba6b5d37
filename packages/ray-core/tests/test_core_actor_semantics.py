"""Actors as Ray 2.x defines them: the actor class object, the built-in methods,
``exit_actor()``, lifetimes of named actors, ``get_if_exists``, ``RuntimeContext`` inside
actors, process titles and concurrency groups."""

from __future__ import annotations

import asyncio
import atexit
import os
import threading
import time

import psutil
import pytest

import ray
from ray.actor import ActorClassInheritanceException, exit_actor
from ray.exceptions import ActorDiedError, RayActorError, UnsupportedFeatureError


@pytest.fixture(scope="module", autouse=True)
def cluster():
    ray.init(num_cpus=4)
    yield
    ray.shutdown()


def _wait_for(predicate, timeout=20.0):
    deadline = time.time() + timeout
    while not predicate():
        assert time.time() < deadline, "condition not met in time"
        time.sleep(0.05)


class Base:
    BASE = 2

    @staticmethod
    def base_static():
        return Base.BASE


@ray.remote
class Counter(Base):
    LIMIT = 3

    def __init__(self, start=0):
        self.value = start

    @classmethod
    def make(cls, start):
        return cls(start)

    @staticmethod
    def double(x):
        return 2 * x

    def limit(self):
        return Counter.LIMIT + Counter.BASE + Counter.base_static() + Counter.double(1)

    def get(self):
        return self.value


def test_actor_class_exposes_the_class_attributes_static_and_class_methods():
    assert Counter.LIMIT == 3 and Counter.BASE == 2
    assert Counter.double(4) == 8
    made = Counter.make(5)  # a classmethod building a plain instance, as in Ray
    assert made.get() == 5
    counter = Counter.remote()
    assert ray.get(counter.limit.remote()) == 3 + 2 + 2 + 2
    public = {name for name in dir(Counter) if not name.startswith("_")}
    assert {"remote", "options", "bind", "get", "limit", "make"} <= public
    with pytest.raises(TypeError, match="cannot be instantiated directly"):
        Counter()
    with pytest.raises(ActorClassInheritanceException, match="Inheriting from actor classes"):
        class Sub(Counter):  # noqa: F841 - defining it is what raises
            pass


def test_actor_class_objects_pickle_into_tasks():
    @ray.remote
    def make_and_read():
        counter = Counter.remote(7)
        return ray.get(counter.get.remote()) + Counter.LIMIT

    assert ray.get(make_and_read.remote()) == 10


def test_builtin_methods_and_handle_dir():
    counter = Counter.remote(4)
    assert ray.get(counter.__ray_ready__.remote()) is True
    assert ray.get(counter.__ray_call__.remote(lambda actor, x: actor.value * x, 3)) == 12
    assert ray.get(counter.__ray_call__.remote(lambda actor, x: actor.value + x, x=1)) == 5
    with pytest.raises(TypeError, match="cannot be called directly"):
        counter.__ray_ready__()
    assert {"__init__", "__ray_ready__", "__ray_call__", "__ray_terminate__", "get"} <= \
        set(dir(counter))
    assert {name for name in dir(counter) if not name.startswith("_")} == \
        {"get", "limit", "make", "double", "base_static"}


def test_methods_are_looked_up_on_the_class_not_the_instance():
    @ray.remote
    class Shadowed:
        def __init__(self):
            self.value = 0  # an attribute named like the method below

        def increase(self):
            self.value += 1

        def value(self):
            return self.value

    actor = Shadowed.remote()
    actor.increase.remote()
    assert ray.get(actor.value.remote()) == 1


def _atexit_actor_class():
    @ray.remote
    class Leaves:
        def __init__(self, path):
            def goodbye():
                with open(path, "w") as f:
                    f.write("bye")

            atexit.register(goodbye)

        def leave(self):
            exit_actor()
            open(self_path_after, "w").close()  # noqa: F821 - never reached

        def leave_but_catch(self):
            try:
                exit_actor()
            except SystemExit:
                pass
            return "caught"

        def ping(self):
            return "pong"

    return Leaves


def test_exit_actor_fails_the_call_and_queued_calls_runs_atexit_and_ends_for_good(tmp_path):
    path = str(tmp_path / "atexit.txt")
    actor = _atexit_actor_class().remote(path)
    pid_ready = ray.get(actor.__ray_ready__.remote())
    assert pid_ready
    leave, queued = actor.leave.remote(), actor.ping.remote()
    for ref in (leave, queued):
        with pytest.raises(ActorDiedError, match=r"exit_actor\(\)"):
            ray.get(ref, timeout=30)
    _wait_for(lambda: os.path.exists(path))
    with pytest.raises(ActorDiedError, match=r"exit_actor\(\)"):
        ray.get(actor.ping.remote(), timeout=30)


def test_exit_actor_caught_by_the_method_still_ends_the_actor(tmp_path):
    actor = _atexit_actor_class().remote(str(tmp_path / "x"))
    with pytest.raises(RayActorError):
        ray.get(actor.leave_but_catch.remote(), timeout=30)
    with pytest.raises(RayActorError):
        ray.get(actor.ping.remote(), timeout=30)


def test_ray_terminate_and_handle_out_of_scope_run_atexit_but_ray_kill_does_not(tmp_path):
    cls = _atexit_actor_class()
    terminated, dropped, killed = (str(tmp_path / n) for n in ("t", "d", "k"))
    a = cls.remote(terminated)
    ray.get(a.ping.remote())
    ray.wait([a.__ray_terminate__.remote()], timeout=30)
    b = cls.remote(dropped)
    ray.get(b.ping.remote())
    del b
    c = cls.remote(killed)
    ray.get(c.ping.remote())
    ray.kill(c)
    _wait_for(lambda: os.path.exists(terminated) and os.path.exists(dropped))
    with pytest.raises(ActorDiedError, match="ray.kill"):
        ray.get(c.ping.remote(), timeout=30)
    assert not os.path.exists(killed)


def test_exit_actor_in_async_actors_and_constructors(tmp_path):
    @ray.remote
    class AsyncLeaves:
        async def leave(self):
            exit_actor()

        async def ping(self):
            return "pong"

    @ray.remote
    class LeavesAtOnce:
        def __init__(self, path):
            atexit.register(lambda: open(path, "w").close())
            exit_actor()

        def ping(self):
            return "pong"

    @ray.remote
    class NeedsLoop:
        def __init__(self):
            # An async actor's constructor runs on its event loop (as in Ray).
            self.task = asyncio.get_running_loop().create_task(asyncio.sleep(0))

        async def ping(self):
            return "pong"

    a = AsyncLeaves.remote()
    assert ray.get(a.ping.remote()) == "pong"
    with pytest.raises(ActorDiedError, match=r"exit_actor\(\)"):
        ray.get(a.leave.remote(), timeout=30)
    with pytest.raises(ActorDiedError):
        ray.get(a.ping.remote(), timeout=30)
    path = str(tmp_path / "ctor")
    b = LeavesAtOnce.remote(path)
    with pytest.raises(ActorDiedError, match=r"exit_actor\(\)"):
        ray.get(b.ping.remote(), timeout=30)
    _wait_for(lambda: os.path.exists(path))
    assert ray.get(NeedsLoop.remote().ping.remote()) == "pong"


def test_exit_actor_in_a_constructor_lets_slow_atexit_handlers_finish(tmp_path):
    # The owner learns of the exit from the creation reply, before the worker runs its
    # atexit handlers: it must not kill a worker that is ending itself on purpose.
    @ray.remote
    class LeavesSlowly:
        def __init__(self, path):
            def goodbye():
                time.sleep(1.0)
                open(path, "w").close()

            atexit.register(goodbye)
            exit_actor()

        def ping(self):
            return "pong"

    paths = [str(tmp_path / f"slow{i}") for i in range(2)]
    actors = [LeavesSlowly.remote(path) for path in paths]
    for actor in actors:
        with pytest.raises(ActorDiedError, match=r"exit_actor\(\)"):
            ray.get(actor.ping.remote(), timeout=30)
    _wait_for(lambda: all(os.path.exists(path) for path in paths))


def test_exit_actor_outside_an_actor_is_a_type_error():
    with pytest.raises(TypeError, match="non-actor worker"):
        exit_actor()

    @ray.remote
    def task():
        exit_actor()

    with pytest.raises(TypeError, match="non-actor worker"):
        ray.get(task.remote())


def test_constructor_error_reaches_every_call_as_actor_died_error():
    @ray.remote
    class Broken:
        def __init__(self):
            raise ValueError("bad config")

        def ping(self):
            return "pong"

    actor = Broken.remote()
    for _ in range(2):
        with pytest.raises(ActorDiedError) as info:
            ray.get(actor.ping.remote(), timeout=30)
        assert info.value.actor_init_failed
        text = str(info.value)
        assert text.startswith("The actor died because of an error raised in its creation "
                               "task, ray::Broken.__init__() (pid=")
        assert f"actor_id={actor._actor_id.hex()}, repr=" in text
        assert text.endswith("ValueError: bad config")


@ray.remote
class Named:
    def pid(self):
        return os.getpid()


def test_named_actor_ends_with_its_last_handle_and_frees_the_name():
    actor = Named.options(name="short-lived").remote()
    pid = ray.get(actor.pid.remote())
    weak = ray.get_actor("short-lived")  # handles by name do not keep it alive
    assert ray.get(weak.pid.remote()) == pid
    del actor, weak
    _wait_for(lambda: not psutil.pid_exists(pid) or
              psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)

    def gone():
        try:
            ray.get_actor("short-lived")
            return False
        except ValueError:
            return True

    _wait_for(gone)
    again = Named.options(name="short-lived").remote()
    assert ray.get(again.pid.remote()) != pid


def test_detached_named_actor_outlives_its_handle():
    actor = Named.options(name="stays", lifetime="detached").remote()
    pid = ray.get(actor.pid.remote())
    del actor
    time.sleep(1)
    assert ray.get(ray.get_actor("stays").pid.remote()) == pid
    ray.kill(ray.get_actor("stays"))


def test_name_taken_get_if_exists_and_racing_creators():
    first = Named.options(name="taken").remote()
    with pytest.raises(ValueError, match="already taken"):
        Named.options(name="taken").remote()
    same = Named.options(name="taken", get_if_exists=True).remote()
    assert same == first
    with pytest.raises(ValueError, match="needs a name"):
        Named.options(get_if_exists=True).remote()

    handles, errors = [], []

    def create():
        try:
            handles.append(Named.options(name="raced", get_if_exists=True).remote())
        except Exception as exc:  # noqa: BLE001 - collected for the assert below
            errors.append(exc)

    threads = [threading.Thread(target=create) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len({h._actor_id for h in handles}) == 1

    @ray.remote
    def create_in_task():
        return ray.get(Named.options(name="raced-in-tasks", get_if_exists=True,
                                     lifetime="detached").remote().pid.remote())

    pids = ray.get([create_in_task.remote() for _ in range(4)])
    assert len(set(pids)) == 1
    ray.kill(ray.get_actor("raced-in-tasks"))


def test_runtime_context_inside_actors_and_process_titles():
    @ray.remote
    class Introspective:
        def who(self):
            ctx = ray.get_runtime_context()
            handle = ctx.current_actor
            return (ctx.get_actor_name(), ctx.get_task_name(), handle._actor_id.hex(),
                    ctx.get_actor_id(), ctx.was_current_actor_reconstructed,
                    psutil.Process().cmdline()[0])

    actor = Introspective.options(name="self-aware").remote()
    name, task_name, handle_id, actor_id, restarted, title = ray.get(actor.who.remote())
    assert (name, task_name, restarted) == ("self-aware", "Introspective.who", False)
    assert handle_id == actor_id == actor._actor_id.hex()
    assert title == "ray::Introspective.who"
    _, task_name, *_, title = ray.get(actor.who.options(name="custom").remote())
    assert (task_name, title) == ("custom", "ray::custom")
    with pytest.raises(RuntimeError, match="only available inside an actor"):
        _ = ray.get_runtime_context().current_actor


def test_concurrency_groups_of_threaded_and_async_actors():
    @ray.remote(concurrency_groups={"io": 2, "compute": 1})
    class Threaded:
        def __init__(self):
            self.running = {"io": 0, "compute": 0, None: 0}
            self.peak = dict(self.running)
            self.lock = threading.Lock()

        def _run(self, group):
            with self.lock:
                self.running[group] += 1
                self.peak[group] = max(self.peak[group], self.running[group])
            time.sleep(0.2)
            with self.lock:
                self.running[group] -= 1
            return threading.current_thread().name

        @ray.method(concurrency_group="io")
        def io(self):
            return self._run("io")

        @ray.method(concurrency_group="compute")
        def compute(self):
            return self._run("compute")

        def default(self):
            return self._run(None)

        def peaks(self):
            return self.peak

    t = Threaded.remote()
    names = ray.get([t.io.remote() for _ in range(4)] + [t.compute.remote() for _ in range(2)]
                    + [t.default.remote()] + [t.default.options(concurrency_group="io")
                                               .remote()])
    assert ray.get(t.peaks.remote()) == {"io": 2, "compute": 1, None: 1}
    assert all("io" in n for n in names[:4]) and all("compute" in n for n in names[4:6])
    assert names[6] == "MainThread"
    with pytest.raises(ValueError, match="no concurrency group 'nope'"):
        ray.get(t.default.options(concurrency_group="nope").remote())

    @ray.remote(concurrency_groups={"slow": 1})
    class AsyncActor:
        @ray.method(concurrency_group="slow")
        async def slow(self):
            await asyncio.sleep(0.3)
            return threading.current_thread().name

        async def fast(self):
            return threading.current_thread().name

    a = AsyncActor.remote()
    start = time.time()
    slow = [a.slow.remote() for _ in range(3)]
    fast = ray.get([a.fast.remote() for _ in range(5)])
    assert time.time() - start < 0.8  # the default group does not wait for "slow"
    assert ray.get(slow) == ["ray-actor-loop-slow"] * 3
    assert set(fast) == {"ray-actor-loop"}
    assert time.time() - start >= 0.85  # "slow" runs one call at a time


def test_bad_concurrency_groups_raise_clear_errors():
    with pytest.raises(ValueError, match="positive integer"):
        Named.options(concurrency_groups={"io": 0})


@ray.remote
def _square(x):
    return x * x


def test_bind_of_functions_actor_classes_and_methods_names_the_remote_call_to_use():
    actor = Named.remote()
    cases = [
        (lambda: Named.bind(), r"Named\.bind\(\).*Call Named\.remote\(\.\.\.\)"),
        (lambda: Named.options(num_cpus=0).bind(),
         r"Named\.options\(\.\.\.\)\.bind\(\).*Named\.options\(\.\.\.\)\.remote"),
        (lambda: actor.pid.bind(), r"actor\.pid\.bind\(\).*actor\.pid\.remote\("),
        (lambda: actor.pid.options(name="p").bind(), r"actor\.pid\.bind\(\)"),
        (lambda: _square.bind(3), r"_square\.bind\(\).*Call _square\.remote\(\.\.\.\)"),
        (lambda: _square.options(num_cpus=1).bind(3),
         r"_square\.options\(\.\.\.\)\.bind\(\).*_square\.options\(\.\.\.\)\.remote"),
    ]
    for bind, message in cases:
        with pytest.raises(UnsupportedFeatureError, match=message) as raised:
            bind()
        assert isinstance(raised.value, TypeError)  # the object does not support it here
        assert "Ray DAGs" in str(raised.value)
    assert ray.get(_square.remote(3)) == 9  # what the message says to use works
