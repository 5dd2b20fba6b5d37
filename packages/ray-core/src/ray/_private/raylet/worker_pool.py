"""Worker processes of one node: start, register, hand out, and reap.

Workers are generic Python processes; the first job that leases one binds it
(its imports and globals belong to that job). Idle workers beyond the
configured pool size are stopped. A worker for a ``runtime_env`` is dedicated to
one (job, env key) from its start: it is a fresh interpreter (not forked from the
zygote, whose imports predate the env's variables) started in the env's working
directory with the env's variables and paths, and only ever serves that env.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time

from ray._private.pdeathsig import die_with_parent

logger = logging.getLogger(__name__)

# EXITING: an idle worker asked whether it may end (``exit_if_unowned``); not leased.
STARTING, IDLE, LEASED, EXITING, DEAD = "starting", "idle", "leased", "exiting", "dead"


def worker_env(config_json: str) -> dict:
    """The environment of worker processes (the cluster secret rides in it)."""
    env = dict(os.environ)
    env.pop("RAY_LAZY_API", None)  # workers run user code: the whole API, as usual
    env["RAY_CONFIG_JSON"] = config_json
    # Workers fault pages in as they touch them; only drivers pre-fault (fast first put).
    env["PLASMA_CLIENT_PREFAULT_BYTES"] = "0"
    return env


def spawn_zygote(logs_dir: str, env: dict) -> subprocess.Popen:
    """The fork server: imports the worker runtime once; workers are forked from it.

    The raylet spawns it before its own heavy imports, so the first worker is ready
    as early as possible (it is on the ``ray.init()``-to-first-result path).
    """
    err = open(os.path.join(logs_dir, "zygote.err"), "ab")  # noqa: SIM115
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "ray._private.workers.zygote"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env,
            close_fds=True, preexec_fn=die_with_parent,
        )
    finally:
        err.close()


class WorkerProc:
    __slots__ = (
        "worker_id", "proc", "pid", "peer", "address", "state", "job_id", "lease",
        "blocked", "started_at", "log_paths", "log_offsets", "is_actor", "detached",
        "env_key", "is_gpu", "keep_until",
    )

    def __init__(self, worker_id: bytes, proc, log_paths):
        self.worker_id = worker_id
        self.proc = proc
        self.pid = proc.pid if proc is not None else None
        self.peer = None
        self.address = None
        self.state = STARTING
        self.job_id: bytes | None = None
        self.lease = None
        self.blocked = False
        self.started_at = time.monotonic()
        self.log_paths = log_paths
        self.log_offsets = [0, 0]
        self.is_actor = False
        self.detached = False
        self.env_key: str | None = None  # the runtime_env this worker is dedicated to
        # As Ray: a worker that ran GPU work serves only GPU work, one that ran CPU-only
        # work only CPU-only work (None: it has run nothing yet).
        self.is_gpu: bool | None = None
        # It owns actors or objects still in use: not asked to end again before this.
        self.keep_until = 0.0

    def can_serve(self, job_id: bytes | None, is_gpu: bool) -> bool:
        return (self.job_id is None or self.job_id == job_id) \
            and (self.is_gpu is None or self.is_gpu == is_gpu)


def _is_zombie(pid: int) -> bool:
    """Whether ``pid`` has exited but is not reaped. The zygote's children are reaped by
    the kernel (it ignores SIGCHLD), but a worker outliving the zygote by a moment is
    reparented to PID 1, which in a container may reap late or never."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:][:1] == b"Z"


class ForkedProcess:
    """A worker forked by the zygote: Popen-like, polled by pid (the zygote reaps it)."""

    def __init__(self, pid: int):
        self.pid = pid
        self.returncode = None

    def poll(self):
        if self.returncode is None:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                self.returncode = -1
            except PermissionError:
                pass
            else:
                if _is_zombie(self.pid):  # exited; its parent has not reaped it yet
                    self.returncode = -1
        return self.returncode

    def send_signal(self, sig) -> None:
        try:
            os.kill(self.pid, sig)
        except ProcessLookupError:
            pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def wait(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout)
            time.sleep(0.005)
        return self.returncode


class WorkerPool:
    def __init__(self, *, session_dir: str, worker_args: list[str], env: dict, max_idle: int,
                 redirect_output: bool = True, output_pid: int | None = None):
        self.session_dir = session_dir
        self.logs_dir = os.path.join(session_dir, "logs")
        # False (ray start --no-redirect-worker-output): workers write where the raylet does.
        self.redirect_output = redirect_output
        self.output_pid = output_pid or os.getpid()  # whose stdout/stderr they then share
        self.worker_args = worker_args
        self.env = env
        self.max_idle = max_idle
        self.workers: dict[bytes, WorkerProc] = {}
        # Removed workers whose process may still need reaping (no zombies).
        self._graveyard: list = []
        self.zygote = None
        self.zygote_ready = False

    # -- the fork server ---------------------------------------------------------------
    def start_zygote(self, started: subprocess.Popen | None = None) -> None:
        """Adopt a zygote the raylet spawned first thing (see ``spawn_zygote``), or start one."""
        self.zygote = started or spawn_zygote(self.logs_dir, self.env)

    def wait_zygote(self) -> bool:
        """Block until the zygote has imported everything (run in a thread)."""
        line = self.zygote.stdout.readline() if self.zygote else b""
        return b"ready" in line

    def zygote_started(self, ok: bool) -> None:
        self.zygote_ready = ok
        if not ok:
            logger.warning("worker zygote failed to start; starting workers directly")
        for worker in list(self.workers.values()):
            if worker.proc is None and worker.state == STARTING and worker.env_key is None:
                self._launch(worker)

    def _fork(self, argv, out_path, err_path) -> ForkedProcess:
        request = json.dumps({"argv": argv, "out": out_path, "err": err_path}) + "\n"
        self.zygote.stdin.write(request.encode())
        self.zygote.stdin.flush()
        reply = json.loads(self.zygote.stdout.readline())
        return ForkedProcess(reply["pid"])

    # -- workers ---------------------------------------------------------------------------
    def start_worker(self, env_key: str | None = None, job_id: bytes | None = None) -> WorkerProc:
        """A new worker; one for a runtime_env (``env_key``) is only registered here and
        started by ``launch_with_env`` once its node-side setup is done."""
        worker_id = os.urandom(20)
        tag = worker_id.hex()[:12]
        if self.redirect_output:
            out_path = os.path.join(self.logs_dir, f"worker-{tag}.out")
            err_path = os.path.join(self.logs_dir, f"worker-{tag}.err")
        else:  # the driver's (embedded) or raylet's stdout/stderr, reopened
            out_path = f"/proc/{self.output_pid}/fd/1"
            err_path = f"/proc/{self.output_pid}/fd/2"
        worker = WorkerProc(worker_id, None, (out_path, err_path))
        self.workers[worker_id] = worker
        if env_key is not None:
            worker.env_key, worker.job_id = env_key, job_id
            return worker
        if self.zygote is None or self.zygote_ready or self.zygote.poll() is not None:
            self._launch(worker)
        return worker  # else launched by zygote_started()

    def _launch(self, worker: WorkerProc) -> None:
        out_path, err_path = worker.log_paths
        argv = ["--worker-id", worker.worker_id.hex(), *self.worker_args]
        proc = None
        if self.zygote_ready and self.zygote.poll() is None:
            try:
                proc = self._fork(argv, out_path, err_path)
            except (OSError, ValueError) as exc:
                logger.warning("zygote fork failed (%s); starting the worker directly", exc)
                self.zygote_ready = False
        if proc is None:
            with open(out_path, "ab") as out, open(err_path, "ab") as err:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "ray._private.workers.default_worker", *argv],
                    stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=self.env,
                    close_fds=True, preexec_fn=die_with_parent,
                )
        worker.proc = proc
        worker.pid = proc.pid

    def launch_with_env(self, worker: WorkerProc, env: dict, cwd: str | None) -> None:
        out_path, err_path = worker.log_paths
        argv = ["--worker-id", worker.worker_id.hex(), *self.worker_args]
        with open(out_path, "ab") as out, open(err_path, "ab") as err:
            worker.proc = subprocess.Popen(
                [sys.executable, "-m", "ray._private.workers.default_worker", *argv],
                stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env, cwd=cwd,
                close_fds=True, preexec_fn=die_with_parent,
            )
        worker.pid = worker.proc.pid

    def idle_for(self, job_id: bytes, env_key: str | None = None,
                 is_gpu: bool = False) -> WorkerProc | None:
        fallback = None
        for w in self.workers.values():
            if w.state != IDLE or w.env_key != env_key or not w.can_serve(job_id, is_gpu):
                continue
            if w.job_id == job_id and w.is_gpu is not None:
                return w
            if fallback is None:
                fallback = w
        return fallback

    def count(self, state: str) -> int:
        return sum(1 for w in self.workers.values() if w.state == state)

    def reap(self) -> list[WorkerProc]:
        """Workers whose process exited (returns them, removed from the pool)."""
        dead = []
        for w in list(self.workers.values()):
            if w.proc is not None and w.proc.poll() is not None:
                dead.append(w)
        for w in dead:
            self.remove(w)
        self._graveyard = [p for p in self._graveyard if p.poll() is None]
        return dead

    def remove(self, worker: WorkerProc) -> None:
        worker.state = DEAD
        if self.workers.pop(worker.worker_id, None) is not None and worker.proc is not None:
            self._graveyard.append(worker.proc)

    def kill(self, worker: WorkerProc, sig=signal.SIGKILL) -> None:
        if worker.proc is not None and worker.proc.poll() is None:
            try:
                worker.proc.send_signal(sig)
            except ProcessLookupError:
                pass

    def stop_all(self, timeout_s: float = 2.0) -> None:
        """Stop every worker, then the zygote: while it lives, it reaps the workers it
        forked as they exit (stopped together, an exited worker could stay a zombie of
        PID 1 and count as running until the timeout)."""
        workers = [w.proc for w in self.workers.values() if w.proc is not None]
        workers += self._graveyard
        deadline = time.monotonic() + timeout_s
        for group in (workers, [self.zygote] if self.zygote is not None else []):
            for p in group:
                if p.poll() is None:
                    try:
                        p.terminate()
                    except ProcessLookupError:
                        pass
            for p in group:
                try:
                    p.wait(max(0.01, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.workers.clear()
