"""The web dashboard: a Flask app in its own process on the head node.

Started by ``ray.init(include_webui=True)`` / ``include_dashboard=True`` or
``ray start --head --include-webui``; bound to 127.0.0.1:8265 (or the next
free port) unless ``dashboard_host``/``--webui-host`` and ``dashboard_port``
say otherwise. It reads everything from the GCS, so it shows the whole
cluster; ``ray.get_webui_url()`` returns its URL. The process belongs to the
node's ``NodeProcesses`` and stops with ``ray.shutdown()`` / ``ray stop``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import subprocess
import sys

from ray._private.gcs import keys

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8265


def check_address(host, port) -> tuple[str, int]:
    """Validate user input: a host string and a TCP port (None = defaults); the dashboard's
    own dependency (Flask, the ``ray-core[default]`` extra) must be installed."""
    if importlib.util.find_spec("flask") is None:
        raise ImportError("the dashboard needs Flask, which is not installed here: "
                          "pip install 'ray-core[default]'")
    host = DEFAULT_HOST if host in (None, "") else host
    if not isinstance(host, str):
        raise TypeError(f"dashboard_host must be a string such as '127.0.0.1', got {host!r}")
    port = DEFAULT_PORT if port is None else port
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise ValueError(f"dashboard_port must be an integer in 1..65535, got {port!r}")
    return host, port


def start(session_dir: str, *, gcs_address: str, node_ip: str, owned_by_driver: bool,
          redis_password: str | None = None, host: str | None = None, port: int | None = None,
          timeout_s: float = 20.0) -> tuple[dict, subprocess.Popen]:
    """Start the dashboard process; returns its info (url, host, port, pid) and the process.

    ``owned_by_driver``: the process dies with this one (else it gets its own session,
    like the other ``ray start`` daemons). The caller registers it for shutdown.
    """
    from ray._private.node import _set_pdeathsig
    from ray.exceptions import RaySystemError

    host, port = check_address(host, port)
    read_fd, write_fd = os.pipe()
    cmd = [sys.executable, "-m", "ray.dashboard.main", "--gcs-address", gcs_address,
           "--host", host, "--port", str(port), "--node-ip", node_ip,
           "--session-dir", session_dir, "--ready-fd", str(write_fd)]
    env = dict(os.environ)
    if redis_password:  # never on the command line, where `ps` would show it
        env["RAY_REDIS_PASSWORD"] = redis_password
    log_path = os.path.join(session_dir, "logs", "dashboard.out")
    with open(log_path, "ab") as out:
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            pass_fds=(write_fd,), env=env,
            preexec_fn=_set_pdeathsig if owned_by_driver else os.setsid,
        )
    os.close(write_fd)
    line = _read_line(read_fd, proc, timeout_s)
    if line is None:
        stop(proc)
        tail = ""
        with contextlib.suppress(OSError), open(log_path, errors="replace") as f:
            tail = f.read()[-2000:]
        raise RaySystemError(f"the dashboard did not start (see {log_path}):\n{tail}")
    return json.loads(line), proc


def stop(proc: subprocess.Popen, timeout_s: float = 5.0) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _read_line(fd, proc, timeout_s):
    from ray._private.node import read_ready_line

    line = read_ready_line(fd, proc, timeout_s)
    return None if line is None else line.decode()


def lookup(gcs) -> dict | None:
    """The running dashboard's info (url, host, port, pid), if the cluster has one."""
    return gcs.hget_obj(keys.DASHBOARD, "info")


__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "check_address", "lookup", "start", "stop"]
