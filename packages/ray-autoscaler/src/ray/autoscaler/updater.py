"""Bring one node up to date: wait for SSH, sync files, run setup and start commands.

Progress is written to the node's ``ray-node-status`` tag (uninitialized ->
waiting-for-ssh -> syncing-files -> setting-up -> up-to-date, or update-failed),
and on success the runtime-config hash, so the autoscaler knows which nodes run
the current commands and file mounts. Connection failures (SSH exit 255, a node
with no IP yet) are retried with exponential backoff; a command that fails for
any other reason fails the update: setup commands are not assumed idempotent.

``sleep`` and ``clock`` are injected, so the retry schedule is tested without waiting.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from ray.autoscaler.command_runner import CommandFailed, CommandRunner, DockerCommandRunner
from ray.autoscaler.node_provider import NodeProvider
from ray.autoscaler.tags import (
    STATUS_SETTING_UP,
    STATUS_SYNCING_FILES,
    STATUS_UP_TO_DATE,
    STATUS_UPDATE_FAILED,
    STATUS_WAITING_FOR_SSH,
    TAG_RAY_NODE_STATUS,
    TAG_RAY_RUNTIME_CONFIG,
)

logger = logging.getLogger(__name__)
T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Backoff:
    """Delays initial_s, initial_s*factor, ... capped at max_s, until timeout_s has passed."""

    initial_s: float = 1.0
    factor: float = 2.0
    max_s: float = 10.0
    timeout_s: float = 300.0

    def delays(self) -> list[float]:
        out, delay, total = [], self.initial_s, 0.0
        while total < self.timeout_s:
            out.append(delay)
            total += delay
            delay = min(delay * self.factor, self.max_s)
        return out


def retry_transport_errors(
    fn: Callable[[], T],
    backoff: Backoff,
    *,
    sleep: Callable[[float], None] = time.sleep,
    describe: str = "",
) -> T:
    """Call fn until it stops failing with a connection error or the backoff runs out."""
    last: CommandFailed | None = None
    for delay in [0.0, *backoff.delays()]:
        if delay:
            sleep(delay)
        try:
            return fn()
        except CommandFailed as e:
            if not e.transport_error:
                raise
            last = e
            logger.info("%s: not reachable yet, retrying in a while (%s)", describe, e)
    assert last is not None
    raise last


@dataclasses.dataclass(frozen=True)
class UpdatePlan:
    """What an update runs; built from the cluster config by the caller."""

    file_mounts: Mapping[str, str] = dataclasses.field(default_factory=dict)
    initialization_commands: Sequence[str] = ()
    setup_commands: Sequence[str] = ()
    start_commands: Sequence[str] = ()
    runtime_hash: str = ""
    # Exported to every command, e.g. RAY_HEAD_IP for workers.
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # restart_only: skip file sync and setup; no_restart: skip the start commands.
    restart_only: bool = False
    no_restart: bool = False
    command_timeout_s: float = 1800.0


class NodeUpdater:
    """Runs an :class:`UpdatePlan` on one node and records the outcome in its tags."""

    def __init__(
        self,
        node_id: str,
        provider: NodeProvider,
        runner: CommandRunner,
        update: UpdatePlan,
        *,
        ssh_backoff: Backoff = Backoff(),
        sleep: Callable[[float], None] = time.sleep,
        log: Callable[[str], None] | None = None,
    ):
        self.node_id = node_id
        self.provider = provider
        self.runner = runner
        self.update = update
        self.ssh_backoff = ssh_backoff
        self.sleep = sleep
        self.log = log or (lambda msg: logger.info("%s", msg))
        self.error: Exception | None = None
        self.statuses: list[str] = []

    def run(self) -> bool:
        """True on success; on failure the node is tagged update-failed and ``error`` is set."""
        try:
            self._run()
        except Exception as e:  # noqa: BLE001 - any failure must reach the node's tags
            self.error = e
            self.log(f"node {self.node_id}: update failed: {e}")
            self._set_status(STATUS_UPDATE_FAILED)
            return False
        self._set_status(STATUS_UP_TO_DATE, {TAG_RAY_RUNTIME_CONFIG: self.update.runtime_hash})
        self.log(f"node {self.node_id}: up to date")
        return True

    def _set_status(self, status: str, extra: Mapping[str, str] | None = None) -> None:
        self.statuses.append(status)
        self.provider.set_node_tags(self.node_id, {TAG_RAY_NODE_STATUS: status, **(extra or {})})

    def _run(self) -> None:
        u = self.update
        self._set_status(STATUS_WAITING_FOR_SSH)
        host = self.runner.ssh if isinstance(self.runner, DockerCommandRunner) else self.runner
        retry_transport_errors(
            lambda: host.run("uptime", timeout_s=30),
            self.ssh_backoff,
            sleep=self.sleep,
            describe=f"node {self.node_id}",
        )
        if not u.restart_only:
            self._set_status(STATUS_SYNCING_FILES)
            for remote, local in sorted(u.file_mounts.items()):
                self.log(f"node {self.node_id}: rsync {local} -> {remote}")
                retry_transport_errors(
                    lambda remote=remote, local=local: self.runner.run_rsync_up(local, remote),
                    self.ssh_backoff,
                    sleep=self.sleep,
                    describe=f"rsync to {self.node_id}",
                )
        self._set_status(STATUS_SETTING_UP)
        if not u.restart_only:
            for cmd in u.initialization_commands:
                self._exec(host, cmd)
            if isinstance(self.runner, DockerCommandRunner):
                self._exec(host, self.runner.start_container_command(sorted(u.file_mounts)))
            for cmd in u.setup_commands:
                self._exec(self.runner, cmd)
        if not u.no_restart:
            for cmd in u.start_commands:
                self._exec(self.runner, cmd)

    def _exec(self, runner: CommandRunner, cmd: str) -> None:
        self.log(f"node {self.node_id}: $ {cmd}")
        retry_transport_errors(
            lambda: runner.run(cmd, env=self.update.env, timeout_s=self.update.command_timeout_s),
            self.ssh_backoff,
            sleep=self.sleep,
            describe=f"node {self.node_id}",
        )


class NodeUpdaterThread(threading.Thread):
    """A NodeUpdater on its own thread, so the monitor keeps deciding while nodes set up."""

    def __init__(self, updater: NodeUpdater):
        super().__init__(name=f"NodeUpdater-{updater.node_id}", daemon=True)
        self.updater = updater
        self.node_id = updater.node_id
        self.succeeded: bool | None = None

    def run(self) -> None:
        self.succeeded = self.updater.run()
