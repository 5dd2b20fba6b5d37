"""Actor lifetimes: ``JobConfig(default_actor_lifetime=)`` applies in the job's workers too,
a non-detached actor ends with its owner (also when the owner is an actor that was
SIGKILLed) while a detached one stays, and ``ray.cancel`` of async actor calls (queued
or running) is final."""

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
