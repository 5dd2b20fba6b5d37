"""`ray start` / `ray.init` flags about output and code loading: --no-redirect-output,
--no-redirect-worker-output and --load-code-from-local, each observed end to end."""

import os
import socket
import subprocess
import sys
import textwrap

import pytest

from ray._private import auth

CLI = [sys.executable, "-m", "ray.scripts.cli"]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def head(tmp_path):
    """Start a head with extra flags; stopped (and its secret forgotten) afterwards."""
    started = []

    def start(*flags, stdout=None, env=None):
        port = _free_port()
        temp = str(tmp_path / "ray")
        proc = subprocess.run(
            CLI + ["start", "--head", "--port", str(port), "--num-cpus", "1",
                   "--node-ip-address", "127.0.0.1", "--temp-dir", temp, *flags],
            stdout=stdout or subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120,
            env=env)
        started.append((temp, port))
        assert proc.returncode == 0, proc.stderr
        return f"127.0.0.1:{port}", temp

    yield start
    for temp, port in started:
        subprocess.run(CLI + ["stop", "--temp-dir", temp], capture_output=True, timeout=120)
        auth.forget_secret(f"127.0.0.1:{port}")


def _run_driver(address, body, cwd=None, env=None):
    code = f"import ray\nray.init(address={address!r})\n" + textwrap.dedent(body)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=cwd, env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_no_redirect_output_sends_worker_and_daemon_output_to_the_terminal(head, tmp_path):
    terminal = tmp_path / "terminal.txt"
    with open(terminal, "w") as f:
        address, temp = head("--no-redirect-output", "--no-redirect-worker-output", stdout=f)
    _run_driver(address, """
        @ray.remote
        def shout():
            print("hello-from-a-worker", flush=True)
        ray.get(shout.remote())
    """)
    session = os.path.join(temp, "session_latest", "logs")
    text = terminal.read_text()
    assert "hello-from-a-worker" in text
    assert not [n for n in os.listdir(session) if n.startswith("worker-")]
    assert not [n for n in os.listdir(session) if n.startswith("raylet")]


def test_load_code_from_local_imports_functions_on_workers(head, tmp_path):
    pkg = tmp_path / "code"
    pkg.mkdir()
    (pkg / "localmod.py").write_text(textwrap.dedent("""
        import ray

        @ray.remote
        def where():
            return __name__

        @ray.remote
        class Counter:
            def __init__(self):
                self.n = 0
            def add(self):
                self.n += 1
                return self.n
    """))
    # Workers must find the module themselves: put it on every process's path.
    env = dict(os.environ, PYTHONPATH=str(pkg) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    address, _ = head("--load-code-from-local", env=env)
    out = _run_driver(address, """
        import localmod
        from ray._private import runtime as rt
        from ray._private.gcs import keys
        core = rt.current()
        print(ray.get(localmod.where.remote()))
        c = localmod.Counter.remote()
        print(ray.get([c.add.remote() for _ in range(3)])[-1])
        stored = [core.gcs.get(k) for k in core.gcs.scan(keys.function(core.job.hex, "*"))]
        print(all(b"ray-local-code:localmod:" in v for v in stored), len(stored))
    """, env=env)
    lines = out.split()
    assert lines[0] == "localmod" and lines[1] == "3"
    assert lines[2] == "True" and int(lines[3]) == 2  # only references, no pickles


def test_load_code_from_local_names_the_missing_module(tmp_path):
    import ray
    from ray._private.runtime.function_manager import import_local
    from ray.exceptions import RaySystemError

    with pytest.raises(RaySystemError, match="cannot import no_such_module_xyz.f"):
        import_local(b"no_such_module_xyz:f")
    assert ray  # the public package imports cleanly alongside
