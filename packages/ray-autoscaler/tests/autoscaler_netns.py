"""Throwaway "hosts" in Linux network namespaces, each running its own sshd.

    with NetnsHosts(n_hosts=3) as net:
        net.ssh(net.hosts[0], "hostname -I")           # from the driver namespace
        net.run_driver([sys.executable, "-m", "ray.autoscaler", "up", ...])

Topology (nothing touches the root namespace)::

    <tag>sw : bridge br0 + veth ends            (the switch)
    <tag>d  : 10.200.0.10   the driver: where `ray up` runs (no sshd)
    <tag>h1 : 10.200.0.11   sshd, HOME=<workdir>/h1
    <tag>h2 : 10.200.0.12   ...

Namespaces share the filesystem, so each host's sshd sets its own HOME
(``SetEnv HOME=...``) and runs in its own mount namespace with a private
``/tmp/ray``: ``~/`` paths and Ray sessions stay per host, as on real machines. Because
every switch is its own namespace, concurrent runs may reuse the same subnet;
only namespace names are unique (tag from the pid and a counter).

Cleanup always runs (also on errors): every process left in the namespaces is
killed (``ip netns pids``), the sshd processes are reaped, the namespaces deleted
and the work directory removed. Needs root, iproute2 and /usr/sbin/sshd.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence

SSHD = "/usr/sbin/sshd"
RAY_TMP = "/tmp/ray"
SUBNET = "10.200.0"
_COUNTER = itertools.count()


def netns_available() -> str | None:
    """None when the harness can run here, else the reason it cannot."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2 (`ip`) is not installed"
    if not os.path.exists(SSHD):
        return "openssh-server is not installed (apt-get install -y openssh-server)"
    if shutil.which("rsync") is None:
        return "rsync is not installed"
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    return None


@dataclasses.dataclass(frozen=True)
class NetnsHost:
    namespace: str
    ip: str
    home: str


class NetnsHosts:
    def __init__(self, n_hosts: int = 3):
        self.n_hosts = n_hosts
        self.tag = f"ra{os.getpid() % 100000}x{next(_COUNTER)}"
        self.switch = f"{self.tag}sw"
        self.driver = NetnsHost(f"{self.tag}d", f"{SUBNET}.10", "")
        self.hosts: list[NetnsHost] = []
        self.namespaces: list[str] = []
        self.workdir = ""
        self.key_path = ""
        self._sshd: list[subprocess.Popen] = []

    # ------------------------------------------------------------ lifecycle
    def __enter__(self) -> NetnsHosts:
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _ip(self, *args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)

    def _setup(self) -> None:
        self.workdir = tempfile.mkdtemp(prefix=f"{self.tag}-")
        self._ip("netns", "add", self.switch)
        self.namespaces.append(self.switch)
        self._ip("-n", self.switch, "link", "set", "lo", "up")
        self._ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        self._ip("-n", self.switch, "link", "set", "br0", "up")
        self._attach(self.driver.namespace, self.driver.ip, 0)
        for i in range(1, self.n_hosts + 1):
            home = os.path.join(self.workdir, f"h{i}")
            os.makedirs(home)
            host = NetnsHost(f"{self.tag}h{i}", f"{SUBNET}.{10 + i}", home)
            self._attach(host.namespace, host.ip, i)
            self.hosts.append(host)
        self._keys()
        for i, host in enumerate(self.hosts, start=1):
            self._start_sshd(i, host)
        for host in self.hosts:
            self._wait_for_port(host, 22)

    def _attach(self, namespace: str, ip: str, index: int) -> None:
        self._ip("netns", "add", namespace)
        self.namespaces.append(namespace)
        veth = f"{self.tag}e{index}"
        self._ip("link", "add", veth, "netns", namespace, "type", "veth",
                 "peer", "name", f"p{index}", "netns", self.switch)  # fmt: skip
        self._ip("-n", namespace, "link", "set", veth, "name", "eth0")
        self._ip("-n", self.switch, "link", "set", f"p{index}", "master", "br0")
        self._ip("-n", self.switch, "link", "set", f"p{index}", "up")
        self._ip("-n", namespace, "link", "set", "lo", "up")
        self._ip("-n", namespace, "addr", "add", f"{ip}/24", "dev", "eth0")
        self._ip("-n", namespace, "link", "set", "eth0", "up")
        # Like a real machine: a default route, so "which IP reaches the world" works.
        self._ip("-n", namespace, "route", "add", "default", "dev", "eth0")

    def _keys(self) -> None:
        os.makedirs("/run/sshd", exist_ok=True)  # sshd's privilege-separation dir
        for name in ("hostkey", "userkey"):
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                 os.path.join(self.workdir, name)],
                check=True, timeout=30,
            )  # fmt: skip
        self.key_path = os.path.join(self.workdir, "userkey")
        shutil.copy(self.key_path + ".pub", os.path.join(self.workdir, "authorized_keys"))
        os.chmod(os.path.join(self.workdir, "authorized_keys"), 0o600)

    def _start_sshd(self, index: int, host: NetnsHost) -> None:
        config = os.path.join(self.workdir, f"sshd_config.{index}")
        with open(config, "w") as f:
            f.write(
                f"ListenAddress {host.ip}\nPort 22\n"
                f"HostKey {self.workdir}/hostkey\n"
                f"PidFile {self.workdir}/sshd-{index}.pid\n"
                f"AuthorizedKeysFile {self.workdir}/authorized_keys\n"
                "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                "MaxStartups 100\nMaxSessions 100\n"
                f"SetEnv HOME={host.home}\n"
            )
        log = open(os.path.join(self.workdir, f"sshd-{index}.log"), "w")
        # Each host gets a private /tmp/ray (its own mount namespace), so `ray start`
        # sessions and `ray stop` stay per host although the filesystem is shared.
        private = os.path.join(host.home, ".tmp_ray")
        os.makedirs(private)
        os.makedirs(RAY_TMP, exist_ok=True)
        inner = f"mount --bind {private} {RAY_TMP} && exec {SSHD} -D -e -f {config}"
        # -D: stay in the foreground, so this Popen owns (and later reaps) the daemon.
        self._sshd.append(
            subprocess.Popen(
                ["ip", "netns", "exec", host.namespace,
                 "unshare", "--mount", "--propagation", "private", "sh", "-c", inner],
                stdout=log, stderr=subprocess.STDOUT,
            )
        )  # fmt: skip
        log.close()

    def _wait_for_port(self, host: NetnsHost, port: int, timeout_s: float = 20) -> None:
        deadline = time.monotonic() + timeout_s
        probe = f"import socket; socket.create_connection(('{host.ip}', {port}), timeout=1)"
        while True:
            done = subprocess.run(
                self.exec_argv(self.driver.namespace, ["python3", "-c", probe]),
                capture_output=True, timeout=30,
            )  # fmt: skip
            if done.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"sshd on {host.ip} did not start: {done.stderr.decode()}")
            time.sleep(0.1)

    def close(self) -> None:
        for namespace in self.namespaces:
            self._kill_namespace_processes(namespace)
        for proc in self._sshd:
            if proc.poll() is None:
                proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        for namespace in reversed(self.namespaces):
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True, timeout=30)
        self.namespaces = []
        if self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    @staticmethod
    def _kill_namespace_processes(namespace: str) -> None:
        listed = subprocess.run(
            ["ip", "netns", "pids", namespace], capture_output=True, text=True, timeout=30
        )
        for pid in listed.stdout.split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass

    # ------------------------------------------------------------ use
    @staticmethod
    def exec_argv(namespace: str, argv: Sequence[str]) -> list[str]:
        return ["ip", "netns", "exec", namespace, *argv]

    def run_driver(self, argv: Sequence[str], *, timeout_s: float = 300, **kwargs):
        """Run argv in the driver namespace; returns the CompletedProcess (text)."""
        return subprocess.run(
            self.exec_argv(self.driver.namespace, argv),
            capture_output=True, text=True, timeout=timeout_s, **kwargs,
        )  # fmt: skip

    def ssh_argv(self, host: NetnsHost, cmd: str) -> list[str]:
        return [
            "ssh", "-i", self.key_path, "-o", "StrictHostKeyChecking=no",
            "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
            "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", f"root@{host.ip}", cmd,
        ]  # fmt: skip

    def ssh(self, host: NetnsHost, cmd: str, timeout_s: float = 60):
        return self.run_driver(self.ssh_argv(host, cmd), timeout_s=timeout_s)

    @staticmethod
    def leftover_namespaces(tag: str) -> list[str]:
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30)
        return [line.split()[0] for line in listed.stdout.splitlines() if line.startswith(tag)]
