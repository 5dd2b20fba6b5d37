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
