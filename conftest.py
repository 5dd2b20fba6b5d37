"""Repository-wide pytest plugin: fail tests that leak processes or shared memory.

Every test (and every module, for module-scoped fixtures) records the child
processes of the test runner and the files under ``/dev/shm`` before it runs.
Whatever it started and did not stop is reported as an error after a short
grace period, and then killed so one leak does not cascade into later tests.
"""

from __future__ import annotations

import os
import time

import psutil
import pytest

_SHM_DIR = "/dev/shm"
_GRACE_S = float(os.environ.get("RAY_TEST_LEAK_GRACE_S", "10"))


def _children() -> dict[int, str]:
    found = {}
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
            found[proc.pid] = " ".join(proc.cmdline())[:200]
        except psutil.Error:
            continue
    return found


def _shm_files() -> set[str]:
    # Python's multiprocessing semaphores (sem.mp-*) are owned and removed by its
    # resource tracker at exit; they are not ours to police per test.
    try:
        return {name for name in os.listdir(_SHM_DIR) if not name.startswith("sem.mp-")}
    except OSError:
        return set()


def _owned_by_earlier_process(pid: int, before_pids) -> bool:
    """True if ``pid`` descends from a process that was already running (e.g. the raylet
    of a module-scoped cluster starting workers on demand): that one is checked later."""
    me = os.getpid()
    try:
        proc = psutil.Process(pid).parent()
        while proc is not None and proc.pid != me:
            if proc.pid in before_pids:
                return True
            proc = proc.parent()
    except psutil.Error:
        return False
    return False


def _wait_for_leaks(before_pids, before_shm):
    deadline = time.monotonic() + _GRACE_S
    while True:
        procs = {
            p: c
            for p, c in _children().items()
            if p not in before_pids and not _owned_by_earlier_process(p, before_pids)
        }
        shm = _shm_files() - before_shm
        if not procs and not shm:
            return {}, set()
        if time.monotonic() > deadline:
            return procs, shm
        time.sleep(0.1)


def _kill(pids):
    for pid in pids:
        try:
            psutil.Process(pid).kill()
        except psutil.Error:
            pass


def _check(before_pids, before_shm, what):
    procs, shm = _wait_for_leaks(before_pids, before_shm)
    if procs or shm:
        _kill(procs)
        lines = [f"{what} leaked resources:"]
        lines += [f"  process {pid}: {cmd}" for pid, cmd in procs.items()]
        lines += [f"  /dev/shm/{name}" for name in sorted(shm)]
        pytest.fail("\n".join(lines), pytrace=False)


@pytest.fixture(autouse=True, scope="module")
def _no_leaks_per_module(request):
    before_pids, before_shm = set(_children()), _shm_files()
    yield
    if request.config.getoption("--allow-leaks"):
        return
    _check(before_pids, before_shm, f"module {request.module.__name__}")


@pytest.fixture(autouse=True)
def _no_leaks_per_test(request):
    before_pids, before_shm = set(_children()), _shm_files()
    yield
    if request.config.getoption("--allow-leaks") or "allow_leaks" in request.keywords:
        return
    _check(before_pids, before_shm, f"test {request.node.nodeid}")


def pytest_addoption(parser):
    parser.addoption(
        "--allow-leaks", action="store_true", help="do not fail tests that leak processes"
    )


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "allow_leaks: the test hands processes to a longer-lived fixture"
    )
