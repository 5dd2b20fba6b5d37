"""A fork server for worker processes.

Starting a Python worker from scratch costs ~0.3-0.5 s here (interpreter start
plus importing the runtime, plasma, numpy, msgpack and redis). The raylet
instead starts one zygote that imports all of that once and forks a worker per
request in a few milliseconds; that is what makes actor creation and the first
task after ``ray.init()`` fast. Children are reaped by the kernel
(SIGCHLD ignored) and die with the zygote, which dies with the raylet.

Protocol on stdin/stdout: one JSON line per request
``{"argv": [...], "out": path, "err": path}`` answered by ``{"pid": N}``.
"""

from __future__ import annotations

import json
import os
import signal
import sys

from ray._private.pdeathsig import die_with_parent


def _preload() -> None:
    # Everything a worker imports before its first task.
    import cloudpickle  # noqa: F401
    import msgpack  # noqa: F401
    import numpy  # noqa: F401
    import redis  # noqa: F401

    import plasma  # noqa: F401
    from ray._private.runtime import core_worker  # noqa: F401
    from ray._private.workers import default_worker  # noqa: F401


def _child(request: dict, control_fds) -> None:
    for fd in control_fds:
        os.close(fd)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    out = os.open(request["out"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    err = os.open(request["err"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    for fd in (out, err, devnull):
        os.close(fd)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
    from ray._private.workers import default_worker

    die_with_parent()
    try:
        default_worker.main(request["argv"])
    finally:
        os._exit(0)


def main() -> None:
    die_with_parent()
    try:
        import setproctitle

        setproctitle.setproctitle("ray::zygote")
    except ImportError:
        pass
    _preload()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps forked workers
    rfd, wfd = sys.stdin.fileno(), sys.stdout.fileno()
    reader = os.fdopen(os.dup(rfd), "r")
    writer = os.fdopen(os.dup(wfd), "w", buffering=1)
    writer.write(json.dumps({"ready": True}) + "\n")
    for line in reader:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request, [reader.fileno(), writer.fileno()])
        writer.write(json.dumps({"pid": pid}) + "\n")


if __name__ == "__main__":
    main()
