"""Actor lifetimes: ``JobConfig(default_actor_lifetime=)`` applies in the job's workers too,
a non-detached actor ends with its owner (also when the owner is an actor that was
SIGKILLed) while a detached one stays, ``ray.cancel`` of async actor calls (queued
or running) is final, and a caller whose GCS subscription was reconnecting when the
actor became ALIVE or DEAD still finds out."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import signal
import time

import psutil
import pytest

import ray
from ray.exceptions import RayActorError, TaskCancelledError
from ray.job_config import JobConfig


@ray.remote
class Child:
    def ready(self):
        return "ok"


@ray.remote
class Parent:
    def spawn(self, lifetime):
        self.child = Child.remote() if lifetime is None else \
            Child.options(lifetime=lifetime).remote()
        assert ray.get(self.child.ready.remote()) == "ok"
        return self.child

    def pid(self):
        return os.getpid()


def _child_dead(child) -> bool:
    try:
        ray.get(child.ready.remote(), timeout=15)
        return False
    except RayActorError:
        return True


@pytest.mark.parametrize("default, explicit, survives", [
    ("detached", None, True),
    ("non_detached", None, False),
    ("detached", "non_detached", False),
    ("non_detached", "detached", True),
])
def test_default_lifetime_and_fate_sharing_with_a_killed_owner(default, explicit, survives):
    ray.init(num_cpus=2, job_config=JobConfig(default_actor_lifetime=default))
    try:
        parent = Parent.remote()
        child = ray.get(parent.spawn.remote(explicit))
        pid = ray.get(parent.pid.remote())
        os.kill(pid, signal.SIGKILL)
        deadline = time.time() + 10
        while psutil.pid_exists(pid) and time.time() < deadline:
            time.sleep(0.05)
        if survives:
            time.sleep(1)
            assert not _child_dead(child)
            ray.kill(child)
        else:
            deadline = time.time() + 15
            while not _child_dead(child):
                assert time.time() < deadline, "the child outlived its owner"
                time.sleep(0.2)
    finally:
        ray.shutdown()


def test_cancelled_async_calls_never_run_and_are_not_retried():
    ray.init(num_cpus=1)
    try:
        @ray.remote(num_cpus=0, max_restarts=1, max_task_retries=-1)
        class Sleeper:
            async def sleep(self, i):
                await asyncio.sleep(30)
                return i

        sleeper = Sleeper.remote()
        with concurrent.futures.ThreadPoolExecutor(max_workers=50) as pool:
            refs = list(pool.map(lambda i: sleeper.sleep.remote(i), range(1500)))
        for ref in reversed(refs):
            ray.cancel(ref)
        start = time.time()
        for ref in refs:
            with pytest.raises(TaskCancelledError):
                ray.get(ref, timeout=60)
        assert time.time() - start < 30

        # A cancelled call is not retried when the actor dies and restarts.
        running = sleeper.sleep.remote(-1)
        ray.get(sleeper.__ray_ready__.remote())
        ray.cancel(running)
        ray.kill(sleeper, no_restart=False)
        with pytest.raises(TaskCancelledError):
            ray.get(running, timeout=30)
        assert ray.get(sleeper.__ray_ready__.remote(), timeout=60)
    finally:
        ray.shutdown()


@ray.remote
class Gated:
    """Its constructor returns (or raises) once the file ``gate`` exists."""

    def __init__(self, gate, fail):
        while not os.path.exists(gate):
            time.sleep(0.02)
        if fail:
            raise ValueError("the constructor failed on purpose")

    def ready(self):
        return "ok"


@ray.remote
class GatedOwner:
    def create(self, gate, fail):
        self.gated = Gated.remote(gate, fail)
        return self.gated  # not waited for: it is this actor's, the driver only calls it


@pytest.mark.parametrize("outcome", ["ALIVE", "DEAD"])
def test_a_caller_sees_an_actor_state_published_while_its_subscription_reconnected(
        tmp_path, deaf_subscriptions, outcome):
    """The driver calls an actor another process owns while its constructor runs, so the
    call waits for the actor's state on its GCS channel. The actor becomes ALIVE (or its
    constructor fails: DEAD) while the driver's pub/sub connection is cut, so that
    message is lost; once the connection is back the driver reads the actor table
    again and the call returns (or raises) promptly."""
    from ray._private import runtime
    from ray._private.gcs import keys

    ray.init(num_cpus=2)
    try:
        gate = tmp_path / "gate"
        owner = GatedOwner.remote()
        gated = ray.get(owner.create.remote(str(gate), outcome == "DEAD"), timeout=60)
        call = gated.ready.remote()  # the driver subscribes to the actor's channel here
        gcs = runtime.current().gcs_client()
        with deaf_subscriptions(gcs):
            gate.touch()
            deadline = time.monotonic() + 30
            while (gcs.hget_obj(keys.ACTORS, gated._actor_id.hex()) or {}).get("state") \
                    != outcome:
                assert time.monotonic() < deadline, "the actor never became " + outcome
                time.sleep(0.02)
        released = time.monotonic()
        if outcome == "ALIVE":
            assert ray.get(call, timeout=15) == "ok"
        else:
            with pytest.raises(RayActorError, match="failed on purpose"):
                ray.get(call, timeout=15)
        assert time.monotonic() - released < 3
    finally:
        ray.shutdown()


def _dies_within(pid: int, seconds: float) -> bool:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return True
        time.sleep(0.05)
    return False


def test_handles_returned_from_tasks_keep_their_actors_and_their_owners(ray_start):
    """The factory pattern: tasks create actors and return their handles. The caller's
    copies borrow the actors, so they outlive the handles in the tasks that made them;
    and the idle workers that own them are not ended by the pool (they would take the
    actors with them). Once the caller drops its copies, the actors end (after the
    grace for copies in transit, shortened here)."""
    ray_start(_system_config={"actor_handle_transit_grace_s": 10.0})

    @ray.remote(num_cpus=0)
    class Made:
        def pid(self):
            return os.getpid()

    @ray.remote
    def nap():
        time.sleep(0.3)

    @ray.remote
    def make():
        made = Made.remote()
        ray.get(nap.remote())  # blocked: its CPU is lent, more workers start
        return [made]

    handles = [h for [h] in ray.get([make.remote() for _ in range(8)])]
    time.sleep(1.5)  # idle workers beyond the pool's limit are asked to end meanwhile
    pids = ray.get([h.pid.remote() for h in handles], timeout=30)
    assert len(set(pids)) == 8
    del handles
    assert all(_dies_within(pid, 30) for pid in pids)


def test_a_handle_passed_to_a_task_keeps_the_actor_after_the_driver_drops_its_own(ray_start):
    ray_start()
    @ray.remote(num_cpus=0)
    class Counter:
        def __init__(self):
            self.n = 0

        def add(self):
            self.n += 1
            return self.n

    @ray.remote
    def use_later(counter):
        time.sleep(1.0)  # the driver's handle is gone by now
        return ray.get(counter.add.remote())

    counter = Counter.remote()
    assert ray.get(counter.add.remote()) == 1
    ref = use_later.remote(counter)
    del counter
    assert ray.get(ref, timeout=30) == 2


def test_callers_of_a_pending_actor_whose_owner_died_get_an_error_not_a_hang(ray_start):
    ray_start()
    @ray.remote
    class Slow:
        def __init__(self):
            time.sleep(2.0)

        def ping(self):
            return "pong"

    @ray.remote(max_calls=1)
    def make():
        return [Slow.remote()]  # its worker exits after this task, while Slow starts

    [slow] = ray.get(make.remote())
    start = time.time()
    with pytest.raises(RayActorError, match="owner"):
        ray.get(slow.ping.remote(), timeout=30)
    assert time.time() - start < 20
