"""How commands and files reach a node: SSH, ``docker exec`` over SSH, kubectl, or locally.

Every runner builds argv lists and hands them to a *process runner* (by default
:func:`run_process`, a thin wrapper over ``subprocess.run``) so the command lines
themselves are unit-tested without a network, and the same runners drive real
hosts in the multinode tests.

    CommandRunner            run(cmd), run_rsync_up/down(src, dst), shell_argv()
      SSHCommandRunner       ssh/rsync to the node's IP
      DockerCommandRunner    the same, inside ``docker.container_name`` on that node
      KubectlCommandRunner   kubectl exec / kubectl cp into a pod
      LocalCommandRunner     bash on this machine, in a per-node directory (tests, memory provider)

Failures raise :class:`CommandFailed` with the node, the command, the exit status
and the tail of its output. Exit status 255 from ssh means the connection failed
(``transport_error``), which callers retry with backoff.
"""

from __future__ import annotations

import abc
import dataclasses
import os
import shlex
import subprocess
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ray.autoscaler.node_provider import NodeProvider

SSH_TRANSPORT_FAILURE = 255


class CommandFailed(RuntimeError):
    """A command on a node exited non-zero (or timed out)."""

    def __init__(self, node_id: str, command: str, returncode: int, output: str = ""):
        self.node_id, self.command, self.returncode, self.output = (
            node_id,
            command,
            returncode,
            output,
        )
        tail = output.strip()[-2000:]
        super().__init__(
            f"command on node {node_id} exited with status {returncode}: {command}"
            + (f"\n--- output ---\n{tail}" if tail else "")
        )

    def __reduce__(self):
        return (type(self), (self.node_id, self.command, self.returncode, self.output))

    @property
    def transport_error(self) -> bool:
        return self.returncode == SSH_TRANSPORT_FAILURE


@dataclasses.dataclass(frozen=True)
class ProcessResult:
    returncode: int
    output: str


ProcessRunner = Callable[..., ProcessResult]


def run_process(
    argv: Sequence[str],
    *,
    timeout_s: float | None = None,
    interactive: bool = False,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    on_output: Callable[[str], None] | None = None,
) -> ProcessResult:
    """Run argv to completion; stdout+stderr captured unless ``interactive``.

    ``on_output`` receives each line as it arrives (``ray exec`` streams long jobs).
    """
    full_env = {**os.environ, **env} if env else None
    try:
        if interactive:
            rc = subprocess.call(list(argv), env=full_env, cwd=cwd, timeout=timeout_s)
            return ProcessResult(rc, "")
        if on_output is not None:
            return _run_streaming(argv, full_env, cwd, on_output)
        done = subprocess.run(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=full_env,
            cwd=cwd,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired as e:
        out = e.output.decode(errors="replace") if isinstance(e.output, bytes) else ""
        return ProcessResult(124, out + f"\n(timed out after {timeout_s} s)")
    return ProcessResult(done.returncode, done.stdout.decode(errors="replace"))


def _run_streaming(argv, env, cwd, on_output: Callable[[str], None]) -> ProcessResult:
    lines = []
    with subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=cwd,
        text=True,
        errors="replace",
    ) as proc:
        for line in proc.stdout:
            lines.append(line)
            on_output(line.rstrip("\n"))
        rc = proc.wait()
    return ProcessResult(rc, "".join(lines))


class CommandRunner(abc.ABC):
    """Runs shell commands on one node and copies files to and from it."""

    node_id: str

    def __init__(self, process_runner: ProcessRunner | None = None):
        self.process_runner = process_runner or run_process

    def run(
        self,
        cmd: str,
        *,
        timeout_s: float | None = 600,
        env: Mapping[str, str] | None = None,
        port_forward: Sequence[int] = (),
        interactive: bool = False,
        on_output: Callable[[str], None] | None = None,
    ) -> str:
        """Run ``cmd`` in a login shell on the node; return its output or raise CommandFailed."""
        argv = self.command_argv(
            with_env(cmd, env), port_forward=port_forward, interactive=interactive
        )
        extra = {"on_output": on_output} if on_output is not None else {}
        result = self.process_runner(argv, timeout_s=timeout_s, interactive=interactive, **extra)
        if result.returncode != 0:
            raise CommandFailed(self.node_id, cmd, result.returncode, result.output)
        return result.output

    @abc.abstractmethod
    def command_argv(
        self, cmd: str, *, port_forward: Sequence[int] = (), interactive: bool = False
    ) -> list[str]:
        """The local argv that runs ``cmd`` on the node."""

    @abc.abstractmethod
    def rsync_up_argv(self, source: str, target: str) -> list[str]: ...

    @abc.abstractmethod
    def rsync_down_argv(self, source: str, target: str) -> list[str]: ...

    def run_rsync_up(self, source: str, target: str, *, timeout_s: float | None = 600) -> None:
        self.run(f"mkdir -p {shlex.quote(_remote_parent(target))}", timeout_s=timeout_s)
        self._run_argv(self.rsync_up_argv(_dir_slash(source), target), timeout_s, "rsync up")

    def run_rsync_down(self, source: str, target: str, *, timeout_s: float | None = 600) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(os.path.expanduser(target))), exist_ok=True)
        self._run_argv(self.rsync_down_argv(source, target), timeout_s, "rsync down")

    def _run_argv(self, argv: list[str], timeout_s: float | None, what: str) -> None:
        result = self.process_runner(argv, timeout_s=timeout_s)
        if result.returncode != 0:
            raise CommandFailed(
                self.node_id, f"{what}: {shlex.join(argv)}", result.returncode, result.output
            )

    def shell_argv(self) -> list[str]:
        """An interactive shell on the node (``ray attach`` without screen/tmux)."""
        return self.command_argv("bash", interactive=True)


def with_env(cmd: str, env: Mapping[str, str] | None) -> str:
    if not env:
        return cmd
    exports = "; ".join(f"export {k}={shlex.quote(str(v))}" for k, v in sorted(env.items()))
    return f"{exports}; {cmd}"


def _dir_slash(path: str) -> str:
    # rsync copies a directory's contents only when the source ends in "/".
    path = os.path.expanduser(path)
    return path.rstrip("/") + "/" if os.path.isdir(path) else path


def _remote_parent(target: str) -> str:
    parent = os.path.dirname(target.rstrip("/"))
    return parent or "."


def ssh_key_path(auth_config: Mapping[str, Any]) -> str | None:
    key = auth_config.get("ssh_private_key")
    return os.path.expanduser(key) if key else None


class SSHCommandRunner(CommandRunner):
    """ssh/rsync to a node's IP as ``auth.ssh_user`` with ``auth.ssh_private_key``."""

    def __init__(
        self,
        *,
        node_id: str,
        provider: NodeProvider,
        auth_config: Mapping[str, Any],
        cluster_name: str,
        use_internal_ip: bool = False,
        process_runner: ProcessRunner | None = None,
        ssh_options: Sequence[str] = (),
        connect_timeout_s: int = 10,
    ):
        super().__init__(process_runner)
        self.node_id = node_id
        self.provider = provider
        self.ssh_user = auth_config.get("ssh_user", "ubuntu")
        self.ssh_key = ssh_key_path(auth_config)
        self.cluster_name = cluster_name
        self.use_internal_ip = use_internal_ip
        self.extra_ssh_options = list(auth_config.get("ssh_options", ())) + list(ssh_options)
        self.connect_timeout_s = connect_timeout_s
        self._ip: str | None = None

    @property
    def ip(self) -> str:
        if self._ip is None:
            get = self.provider.internal_ip if self.use_internal_ip else self.provider.external_ip
            ip = get(self.node_id)
            if not ip:
                raise CommandFailed(
                    self.node_id, "<resolve ip>", SSH_TRANSPORT_FAILURE, "no IP yet"
                )
            self._ip = ip
        return self._ip

    def ssh_options(self) -> list[str]:
        opts = [
            "-o", "StrictHostKeyChecking=no",
            "-o", "UserKnownHostsFile=/dev/null",
            "-o", "LogLevel=ERROR",
            "-o", "BatchMode=yes",
            "-o", f"ConnectTimeout={self.connect_timeout_s}",
            "-o", "ServerAliveInterval=5",
            "-o", "ServerAliveCountMax=3",
        ]  # fmt: skip
        if self.ssh_key:
            opts = ["-i", self.ssh_key, "-o", "IdentitiesOnly=yes", *opts]
        return opts + self.extra_ssh_options

    def command_argv(
        self, cmd: str, *, port_forward: Sequence[int] = (), interactive: bool = False
    ) -> list[str]:
        argv = ["ssh", *(["-tt"] if interactive else []), *self.ssh_options()]
        for port in port_forward:
            argv += ["-L", f"{port}:localhost:{port}"]
        return [*argv, f"{self.ssh_user}@{self.ip}", f"bash --login -c {shlex.quote(cmd)}"]

    def _rsh(self) -> str:
        return shlex.join(["ssh", *self.ssh_options()])

    def rsync_up_argv(self, source: str, target: str) -> list[str]:
        return ["rsync", "-az", "--rsh", self._rsh(), source, f"{self.ssh_user}@{self.ip}:{target}"]

    def rsync_down_argv(self, source: str, target: str) -> list[str]:
        return ["rsync", "-az", "--rsh", self._rsh(), f"{self.ssh_user}@{self.ip}:{source}", target]


class DockerCommandRunner(CommandRunner):
    """Runs commands inside ``docker.container_name`` on a node reached over SSH.

    Files go to the host with rsync; :meth:`start_container_command` bind-mounts each
    file_mounts target, so the container sees them at the same path.
    """

    def __init__(self, ssh: CommandRunner, docker_config: Mapping[str, Any]):
        super().__init__(ssh.process_runner)
        self.ssh = ssh
        self.node_id = ssh.node_id
        self.image = docker_config["image"]
        self.container = docker_config.get("container_name") or "ray_docker"
        self.run_options = list(docker_config.get("run_options", ()))

    def command_argv(
        self, cmd: str, *, port_forward: Sequence[int] = (), interactive: bool = False
    ) -> list[str]:
        # -t only with a terminal: "docker exec -it" fails with no TTY (CI, ssh without -tt).
        flags = "-it" if interactive else "-i"
        inner = (
            f"docker exec {flags} {shlex.quote(self.container)} /bin/bash -lc {shlex.quote(cmd)}"
        )
        return self.ssh.command_argv(inner, port_forward=port_forward, interactive=interactive)

    def run_on_host(self, cmd: str, **kwargs: Any) -> str:
        return self.ssh.run(cmd, **kwargs)

    def rsync_up_argv(self, source: str, target: str) -> list[str]:
        return self.ssh.rsync_up_argv(source, target)

    def rsync_down_argv(self, source: str, target: str) -> list[str]:
        return self.ssh.rsync_down_argv(source, target)

    def run_rsync_up(self, source: str, target: str, *, timeout_s: float | None = 600) -> None:
        self.ssh.run_rsync_up(source, target, timeout_s=timeout_s)

    def start_container_command(self, mount_targets: Sequence[str] = ()) -> str:
        """Idempotent: starts the container unless it is already running."""
        mounts = " ".join(f"-v {shlex.quote(t)}:{shlex.quote(t)}" for t in mount_targets)
        options = " ".join(shlex.quote(o) for o in self.run_options)
        name = shlex.quote(self.container)
        run = (
            f"docker run --rm --name {name} -d -it -e LC_ALL=C.UTF-8 -e LANG=C.UTF-8 "
            f"--net=host {mounts} {options} {shlex.quote(self.image)} bash"
        )
        running = f"docker inspect -f '{{{{.State.Running}}}}' {name} 2>/dev/null"
        start = f'[ "$({running})" = true ] || {" ".join(run.split())}'
        return f"{self.install_command()} && ({start})"

    @staticmethod
    def install_command() -> str:
        """Installs Docker on nodes that lack it (the documented behaviour)."""
        return (
            "(command -v docker >/dev/null || (curl -fsSL https://get.docker.com | sudo sh"
            " && sudo usermod -aG docker $USER))"
        )

    def stop_container_command(self) -> str:
        return f"docker stop {shlex.quote(self.container)} || true"


class KubectlCommandRunner(CommandRunner):
    """``kubectl exec`` / ``kubectl cp`` into a pod."""

    def __init__(
        self, *, node_id: str, namespace: str, process_runner: ProcessRunner | None = None
    ):
        super().__init__(process_runner)
        self.node_id = node_id
        self.namespace = namespace

    def command_argv(
        self, cmd: str, *, port_forward: Sequence[int] = (), interactive: bool = False
    ) -> list[str]:
        if port_forward:
            raise ValueError("port forwarding into pods: use kubectl port-forward instead")
        flags = ["-it"] if interactive else ["-i"]
        return [
            "kubectl", "-n", self.namespace, "exec", *flags, self.node_id,
            "--", "bash", "--login", "-c", cmd,
        ]  # fmt: skip

    def rsync_up_argv(self, source: str, target: str) -> list[str]:
        return ["kubectl", "-n", self.namespace, "cp", source, f"{self.node_id}:{target}"]

    def rsync_down_argv(self, source: str, target: str) -> list[str]:
        return ["kubectl", "-n", self.namespace, "cp", f"{self.node_id}:{source}", target]


class LocalCommandRunner(CommandRunner):
    """A "node" that is a directory on this machine: commands run in bash with HOME there.

    Used by the in-memory provider, so ``ray up`` and the updater run real commands
    and real file copies in tests without SSH. Remote paths starting with ``~`` land in
    the node's home; absolute remote paths are placed under the node's root directory.
    """

    def __init__(self, *, node_id: str, root: str, process_runner: ProcessRunner | None = None):
        super().__init__(process_runner)
        self.node_id = node_id
        self.root = root
        self.home = os.path.join(root, "home")
        os.makedirs(self.home, exist_ok=True)

    def run(self, cmd: str, **kwargs: Any) -> str:
        kwargs.pop("port_forward", None)
        return super().run(cmd, **kwargs)

    def command_argv(
        self, cmd: str, *, port_forward: Sequence[int] = (), interactive: bool = False
    ) -> list[str]:
        return ["env", f"HOME={self.home}", "bash", "-c", f"cd ~ && {cmd}"]

    def local_path(self, remote: str) -> str:
        if remote.startswith("~"):
            return os.path.join(self.home, remote[1:].lstrip("/"))
        if os.path.isabs(remote):
            return os.path.join(self.root, remote.lstrip("/"))
        return os.path.join(self.home, remote)

    def run_rsync_up(self, source: str, target: str, *, timeout_s: float | None = 600) -> None:
        os.makedirs(os.path.dirname(self.local_path(target).rstrip("/")), exist_ok=True)
        self._run_argv(self.rsync_up_argv(_dir_slash(source), target), timeout_s, "copy up")

    def rsync_up_argv(self, source: str, target: str) -> list[str]:
        return ["cp", "-rT", source, self.local_path(target)]

    def rsync_down_argv(self, source: str, target: str) -> list[str]:
        return ["cp", "-rT", self.local_path(source), os.path.expanduser(target)]
