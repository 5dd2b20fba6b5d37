"""A forked worker's process as the raylet sees it: a worker that exited counts as
exited even while it is an unreaped zombie (a worker that outlives the zygote by a
moment is reparented to PID 1, which in a container may reap it late), so stopping a
node does not wait out its timeout for workers that are already gone."""

import os
import time

from ray._private.raylet.worker_pool import ForkedProcess, _is_zombie


def test_an_exited_unreaped_worker_counts_as_exited():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    try:
        deadline = time.monotonic() + 10
        while not _is_zombie(pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _is_zombie(pid)  # exited, not reaped: kill(pid, 0) still succeeds
        os.kill(pid, 0)
        proc = ForkedProcess(pid)
        assert proc.poll() == -1
        assert proc.wait(timeout=0.1) == -1  # no waiting out the timeout
    finally:
        os.waitpid(pid, 0)


def test_a_running_worker_is_running():
    pid = os.fork()
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    try:
        assert not _is_zombie(pid)
        assert ForkedProcess(pid).poll() is None
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    assert not _is_zombie(pid)  # reaped: no such process
