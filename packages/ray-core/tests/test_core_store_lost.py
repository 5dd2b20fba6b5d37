"""A worker whose node's object store goes away (its raylet died) ends, instead of
reporting the node's death as the task's error: the owner then sees the worker die and
retries the task elsewhere or raises ``WorkerCrashedError``, as in Ray. The chaos run
with spilling (``test_core_spilling_chaos.py``) met it as a ``RayTaskError(
StoreConnectionError)`` from ``ray.get`` when a raylet was killed while a task stored its
result. The real ``TaskExecutor`` runs in a child process (it exits)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from plasma.errors import StoreConnectionError
from ray._private.runtime.task_executor import _lost_the_store

CHILD = textwrap.dedent("""
    import os, sys
    from plasma.errors import StoreConnectionError
    from ray._private import ids, messages
    from ray._private.runtime.context import JobState, TaskContext
    from ray._private.runtime.profiler import Profiler
    from ray._private.runtime.task_executor import TaskExecutor

    class Objects:  # the node's store: gone when the task stores its result
        def store_return(self, object_id, value):
            if sys.argv[1] == "lost":
                raise StoreConnectionError("lost the connection to the store: reset")
            return messages.ReturnObject(object_id, messages.Inline(b"", repr(value).encode()))

    class Actor:
        def ping(self):
            return 7

    job = JobState(ids.JobID.from_int(1), None, load_code_from_local=True)
    executor = TaskExecutor(
        context=TaskContext(bytes(16)), job=job, objects=Objects(), gcs=None,
        profiler=Profiler(None, enabled=False, capacity=10, flush_period_s=3600,
                          node_ip="127.0.0.1", component="worker"),
        node_ip="127.0.0.1", notify_owner=lambda *a: None)
    executor.actor, executor.actor_methods, executor.actor_class_name = Actor(), {}, "Actor"
    owner = messages.OwnerAddress("127.0.0.1", 1, "/tmp/none", bytes(20))
    spec = messages.TaskSpec(task_id=os.urandom(16), job_id=job.hex, function_id=b"",
                             name="ping", args=[], kwarg_names=[], num_returns=1, owner=owner,
                             kind=messages.TaskKind.ACTOR_METHOD, method="ping",
                             enable_task_events=False)
    done = executor.execute(spec)
    print("reported", [r.value.data for r in done.returns])
""")


def _run(mode: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True,
                          timeout=60)


def test_a_worker_that_lost_its_store_exits_instead_of_reporting_an_error():
    lost = _run("lost")
    assert lost.returncode == 1, lost.stdout + lost.stderr
    assert "reported" not in lost.stdout
    assert "lost this node's object store" in lost.stderr


def test_the_same_task_with_its_store_runs_to_completion():
    ok = _run("ok")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "reported [b'7']" in ok.stdout


def test_what_counts_as_the_store_going_away():
    assert _lost_the_store(StoreConnectionError("reset"))
    try:
        try:
            raise StoreConnectionError("reset")
        except StoreConnectionError as exc:
            raise ValueError("the task wrapped it") from exc
    except ValueError as wrapped:
        assert _lost_the_store(wrapped)
    assert not _lost_the_store(ValueError("the task's own error"))
