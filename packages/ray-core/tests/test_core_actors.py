"""Actors through the public API: the documented examples and failure behaviour."""

import asyncio
import os
import signal
import time

import numpy as np
import pytest

import ray


@pytest.fixture(autouse=True)
def _cluster(ray_module):
    yield


@ray.remote
class Counter:
    def __init__(self, start=0):
        self.value = start

    def increment(self):
        self.value += 1
        return self.value

    def get(self):
        return self.value

    def pid(self):
        return os.getpid()


def test_counter_example_calls_run_in_order():
    a1, a2 = Counter.remote(), Counter.remote()
    refs = [a1.increment.remote() for _ in range(10)]
    assert ray.get(refs) == list(range(1, 11))
    assert ray.get(a2.increment.remote()) == 1


def test_actor_class_cannot_be_instantiated_directly():
    with pytest.raises(TypeError, match="remote"):
        Counter()


def test_ray_method_num_return_vals():
    @ray.remote
    class Multi:
        @ray.method(num_return_vals=2)
        def two(self):
            return 1, 2

        @ray.method(num_returns=3)
        def three(self):
            return "a", "b", "c"

    m = Multi.remote()
    assert ray.get(list(m.two.remote())) == [1, 2]
    assert ray.get(list(m.three.remote())) == ["a", "b", "c"]


def test_passing_handles_to_tasks_and_actors():
    counter = Counter.remote()

    @ray.remote
    def bump(c, n):
        return ray.get([c.increment.remote() for _ in range(n)])[-1]

    ray.get([bump.remote(counter, 5) for _ in range(3)])
    assert ray.get(counter.get.remote()) == 15

    @ray.remote
    class Caller:
        def call(self, c):
            return ray.get(c.increment.remote())

    caller = Caller.remote()
    assert ray.get(caller.call.remote(counter)) == 16


def test_actor_can_receive_its_own_handle():
    @ray.remote
    class Selfish:
        def __init__(self):
            self.handle = None
            self.n = 0

        def register_handle(self, handle):
            self.handle = handle
            return "ok"

        def bump(self):
            self.n += 1
            return self.n

        def call_self(self):
            self.handle.bump.remote()
            return "sent"

    b = Selfish.remote()
    assert ray.get(b.register_handle.remote(b)) == "ok"
    ray.get(b.call_self.remote())
    deadline = time.time() + 10
    while ray.get(b.bump.remote()) < 2 and time.time() < deadline:
        pass


def test_parameter_server_sync():
    @ray.remote
    class ParameterServer:
        def __init__(self, dim):
            self.params = np.zeros(dim)

        def get_params(self):
            return self.params

        def update_params(self, grad):
            self.params += grad

    @ray.remote
    def worker(ps):
        for _ in range(10):
            ps.update_params.remote(np.ones(10))
        return True

    ps = ParameterServer.remote(10)
    ray.get([worker.remote(ps) for _ in range(2)])
    deadline = time.time() + 10
    while time.time() < deadline:
        params = ray.get(ps.get_params.remote())
        if params[0] == 20:
            break
    assert params[0] == 20 and params.shape == (10,)


def test_method_error_surfaces_and_actor_survives():
    @ray.remote
    class Fragile:
        def fail(self):
            raise KeyError("missing")

        def ok(self):
            return "fine"

    f = Fragile.remote()
    with pytest.raises(KeyError):
        ray.get(f.fail.remote())
    assert ray.get(f.ok.remote()) == "fine"


def test_constructor_error_makes_calls_fail_with_actor_error():
    @ray.remote
    class Broken:
        def __init__(self):
            raise RuntimeError("cannot start")

        def f(self):
            return 1

    b = Broken.remote()
    with pytest.raises(ray.exceptions.RayActorError, match="cannot start"):
        ray.get(b.f.remote(), timeout=30)


def test_killed_actor_raises_actor_error_and_never_hangs():
    c = Counter.remote()
    pid = ray.get(c.pid.remote())
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(c.increment.remote(), timeout=30)
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(c.increment.remote(), timeout=30)


def test_actor_restarts_after_sigkill_with_max_restarts():
    @ray.remote(max_reconstructions=2)
    class Phoenix:
        def __init__(self):
            self.calls = 0

        def pid(self):
            self.calls += 1
            return os.getpid()

    p = Phoenix.remote()
    first = ray.get(p.pid.remote())
    os.kill(first, signal.SIGKILL)
    deadline = time.time() + 30
    while True:
        try:
            second = ray.get(p.pid.remote(), timeout=30)
            break
        except ray.exceptions.RayActorError:
            assert time.time() < deadline
            time.sleep(0.1)
    assert second != first


def test_max_task_retries_resends_in_flight_calls():
    @ray.remote(max_restarts=1, max_task_retries=1)
    class Slow:
        def work(self, t):
            time.sleep(t)
            return os.getpid()

    s = Slow.remote()
    pid = ray.get(s.work.remote(0))
    ref = s.work.remote(1.0)
    time.sleep(0.3)
    os.kill(pid, signal.SIGKILL)
    assert ray.get(ref, timeout=60) != pid


def test_ray_kill_stops_the_actor():
    c = Counter.remote()
    ray.get(c.increment.remote())
    ray.kill(c)
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(c.increment.remote(), timeout=30)


def test_ray_kill_of_an_actor_still_starting_releases_its_worker_and_cpu():
    """Killed before (or while) its constructor runs, an actor must never come up:
    its leased worker is taken back, so the CPU it reserved is free again."""
    import psutil

    @ray.remote(num_cpus=1)
    class Starting:
        def ping(self):
            return "pong"

    holder = Starting.remote()  # one CPU taken: the next creations queue for the other
    assert ray.get(holder.ping.remote()) == "pong"
    free_before = ray.available_resources().get("CPU", 0)
    killed = []
    for delay in (0, 0, 0.005, 0.02, 0.05):
        a = Starting.remote()  # rebinding drops the previous handle too
        time.sleep(delay)
        ray.kill(a)
        killed.append(a)
    for a in killed:
        with pytest.raises(ray.exceptions.RayActorError):
            ray.get(a.ping.remote(), timeout=30)
    deadline = time.time() + 15
    while True:
        alive = [p for p in psutil.Process().children(recursive=True)
                 if p.name().startswith("ray::Starting")]
        if len(alive) == 1 and ray.available_resources().get("CPU", 0) == free_before:
            break
        assert time.time() < deadline, (alive, ray.available_resources())
        time.sleep(0.1)
    assert ray.get(holder.ping.remote()) == "pong"
    ray.kill(holder)


def test_exit_actor_ends_the_process():
    @ray.remote
    class Quitter:
        def pid(self):
            return os.getpid()

        def quit(self):
            ray.actor.exit_actor()

    q = Quitter.remote()
    pid = ray.get(q.pid.remote())
    q.quit.remote()
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            os.kill(pid, 0)
            time.sleep(0.05)
        except ProcessLookupError:
            break
    else:
        pytest.fail("actor process did not exit")
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(q.pid.remote(), timeout=30)


def test_actor_exits_when_original_handle_goes_out_of_scope():
    c = Counter.remote()
    pid = ray.get(c.pid.remote())
    del c
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            os.kill(pid, 0)
            time.sleep(0.05)
        except ProcessLookupError:
            return
    pytest.fail("actor process outlived its handle")


def test_named_actors_old_and_new_api():
    from ray.experimental import named_actors

    c = Counter.remote()
    named_actors.register_actor("global_counter", c)
    same = named_actors.get_actor("global_counter")
    ray.get(same.increment.remote())
    assert ray.get(c.get.remote()) == 1

    d = Counter.options(name="modern").remote(10)
    assert ray.get(ray.get_actor("modern").increment.remote()) == 11
    with pytest.raises(ValueError):
        Counter.options(name="modern").remote()
    with pytest.raises(ValueError):
        ray.get_actor("no-such-actor")
    ray.kill(d)


def test_async_actor_runs_calls_concurrently():
    @ray.remote
    class AsyncActor:
        async def sleepy(self, t):
            await asyncio.sleep(t)
            return t

    a = AsyncActor.remote()
    ray.get(a.sleepy.remote(0))
    start = time.time()
    assert ray.get([a.sleepy.remote(0.5) for _ in range(10)]) == [0.5] * 10
    assert time.time() - start < 2.5


def test_threaded_actor_with_max_concurrency():
    @ray.remote(max_concurrency=4)
    class Threaded:
        def block(self, t):
            time.sleep(t)
            return 1

    t = Threaded.remote()
    ray.get(t.block.remote(0))
    start = time.time()
    assert sum(ray.get([t.block.remote(0.5) for _ in range(4)])) == 4
    assert time.time() - start < 1.5


def test_actor_no_node_can_host_waits_pending_and_can_be_killed():
    # As Ray: not refused at creation; it waits for a node that fits (the raylet warns).
    @ray.remote(num_gpus=4)
    class GPUActor:
        def ping(self):
            return 1

    actor = GPUActor.remote()
    call = actor.ping.remote()
    ready, _ = ray.wait([call], timeout=1.0)
    assert ready == []
    ray.kill(actor)
    with pytest.raises(ray.exceptions.RayActorError, match="ray.kill"):
        ray.get(call, timeout=30)


def test_actor_pool_map_and_unordered():
    from ray.util import ActorPool

    @ray.remote
    class Doubler:
        def double(self, v):
            return 2 * v

    pool = ActorPool([Doubler.remote(), Doubler.remote()])
    assert list(pool.map(lambda a, v: a.double.remote(v), range(6))) == [0, 2, 4, 6, 8, 10]
    assert sorted(pool.map_unordered(lambda a, v: a.double.remote(v), range(4))) == [0, 2, 4, 6]
    pool.submit(lambda a, v: a.double.remote(v), 21)
    assert pool.get_next() == 42


def test_checkpointable_actor_restores_state_after_restart(tmp_path):
    from ray.actor import Checkpointable

    @ray.remote(max_reconstructions=1)
    class Saver(Checkpointable):
        def __init__(self, directory):
            self.dir = directory
            self.value = 0

        def add(self, n):
            self.value += n
            return self.value

        def pid(self):
            return os.getpid()

        def should_checkpoint(self, ctx):
            return True

        def save_checkpoint(self, actor_id, checkpoint_id):
            with open(os.path.join(self.dir, checkpoint_id.hex()), "w") as f:
                f.write(str(self.value))

        def load_checkpoint(self, actor_id, available):
            with open(os.path.join(self.dir, available[0].checkpoint_id.hex())) as f:
                self.value = int(f.read())
            return available[0].checkpoint_id

        def checkpoint_expired(self, actor_id, checkpoint_id):
            pass

    s = Saver.remote(str(tmp_path))
    assert ray.get(s.add.remote(5)) == 5
    pid = ray.get(s.pid.remote())
    os.kill(pid, signal.SIGKILL)
    deadline = time.time() + 30
    while True:
        try:
            assert ray.get(s.add.remote(1), timeout=30) == 6
            break
        except ray.exceptions.RayActorError:
            assert time.time() < deadline
            time.sleep(0.1)
