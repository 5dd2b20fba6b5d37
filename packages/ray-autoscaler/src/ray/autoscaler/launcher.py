"""What the cluster commands do: launch/update the head, tear down, exec, rsync, submit.

Plain functions with injectable process runner, echo and sleep; ``commands.py``
wraps them as click commands. ``ray up`` launches (or finds) the head node, syncs
``file_mounts`` plus the bootstrapped config and SSH key
(``~/ray_bootstrap_config.yaml``, ``~/ray_bootstrap_key.pem``), and runs the head's
setup and start commands; the head's monitor then launches the workers.
"""

from __future__ import annotations

import os
import shlex
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import click
import yaml

from ray.autoscaler.autoscaler import make_command_runner
from ray.autoscaler.command_runner import CommandFailed, DockerCommandRunner, SSHCommandRunner
from ray.autoscaler.config import (
    ClusterConfig,
    ConfigError,
    hash_launch_config,
    hash_runtime_config,
    load_config,
)
from ray.autoscaler.node_provider import (
    NodeProvider,
    ProviderError,
    get_node_provider,
    get_provider_class,
)
from ray.autoscaler.tags import (
    NODE_KIND_HEAD,
    NODE_KIND_WORKER,
    STATUS_UNINITIALIZED,
    TAG_RAY_LAUNCH_CONFIG,
    TAG_RAY_NODE_KIND,
    TAG_RAY_NODE_NAME,
    TAG_RAY_NODE_STATUS,
    TAG_RAY_USER_NODE_TYPE,
)
from ray.autoscaler.updater import Backoff, NodeUpdater, UpdatePlan

BOOTSTRAP_CONFIG_PATH = "~/ray_bootstrap_config.yaml"
BOOTSTRAP_KEY_PATH = "~/ray_bootstrap_key.pem"
MONITOR_LOG_GLOB = "/tmp/ray/session_*/logs/monitor*"

Echo = Callable[[str], None]


class ClusterError(click.ClickException):
    """A cluster command failed; the message says what to do."""


def _load(config_file: str, override_cluster_name: str | None, **overrides: Any) -> ClusterConfig:
    try:
        config = load_config(config_file)
        changes = {k: v for k, v in overrides.items() if v is not None}
        if override_cluster_name:
            changes["cluster_name"] = override_cluster_name
        return config.replace(**changes) if changes else config
    except ConfigError as e:
        raise ClusterError(str(e))


def _provider(config: ClusterConfig) -> NodeProvider:
    try:
        return get_node_provider(config.provider, config.cluster_name)
    except ProviderError as e:
        raise ClusterError(str(e))


def _head_nodes(provider: NodeProvider) -> list[str]:
    return provider.non_terminated_nodes({TAG_RAY_NODE_KIND: NODE_KIND_HEAD})


def _require_head(provider: NodeProvider, config: ClusterConfig) -> str:
    heads = _head_nodes(provider)
    if not heads:
        raise ClusterError(
            f"head node of cluster {config.cluster_name!r} not found: start it with "
            "`ray up` (or pass --start)"
        )
    return heads[0]


def _confirm(message: str, yes: bool) -> None:
    if not yes:
        click.confirm(message, abort=True)


def _wait(
    what: str, ready: Callable[[], Any], timeout_s: float, sleep: Callable[[float], None]
) -> Any:
    deadline = time.monotonic() + timeout_s
    delay = 0.1
    while True:
        value = ready()
        if value:
            return value
        if time.monotonic() > deadline:
            raise ClusterError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        sleep(delay)
        delay = min(delay * 2, 5.0)


# ---------------------------------------------------------------------------- up
def create_or_update_cluster(
    config_file: str,
    *,
    override_min_workers: int | None = None,
    override_max_workers: int | None = None,
    no_restart: bool = False,
    restart_only: bool = False,
    yes: bool = False,
    override_cluster_name: str | None = None,
    process_runner: Any = None,
    echo: Echo = click.echo,
    sleep: Callable[[float], None] = time.sleep,
    ssh_backoff: Backoff = Backoff(),
) -> str:
    """Launch or update the head node; return its node id."""
    if no_restart and restart_only:
        raise ClusterError("--restart-only and --no-restart cannot be combined: pick one")
    config = _load(
        config_file,
        override_cluster_name,
        min_workers=override_min_workers,
        max_workers=override_max_workers,
    )
    try:
        cls = get_provider_class(config.provider)
        config = load_config(cls.bootstrap_config(config.to_dict()))
    except (ProviderError, ConfigError) as e:
        raise ClusterError(str(e))
    provider = _provider(config)
    try:
        head = _launch_head_if_needed(config, provider, yes, echo, sleep)
        _update_head(
            config,
            provider,
            head,
            no_restart=no_restart,
            restart_only=restart_only,
            process_runner=process_runner,
            echo=echo,
            sleep=sleep,
            ssh_backoff=ssh_backoff,
        )
        ip = _head_ip(config, provider, head)
        over_ssh = isinstance(provider.get_command_runner(head, config.auth), SSHCommandRunner)
    finally:
        provider.cleanup()
    echo(f"Head node {head} of cluster {config.cluster_name!r} is up at {ip}.")
    echo(f"  To run a command on it:  ray exec {config_file} 'echo \"hello world\"'")
    echo(f"  To open a shell on it:   ray attach {config_file}")
    if over_ssh:
        key = config.auth.get("ssh_private_key")
        user = config.auth.get("ssh_user", "ubuntu")
        echo(f"  Or: ssh {'-i ' + key + ' ' if key else ''}{user}@{ip}")
    return head


def _launch_head_if_needed(
    config: ClusterConfig, provider: NodeProvider, yes: bool, echo: Echo, sleep
) -> str:
    head_type = config.node_types[config.head_node_type]
    launch_hash = hash_launch_config(head_type.node_config, config.auth)
    heads = _head_nodes(provider)
    if heads and provider.node_tags(heads[0]).get(TAG_RAY_LAUNCH_CONFIG) != launch_hash:
        _confirm("The head node's config changed: terminate it and launch a new one?", yes)
        echo(f"Terminating out-of-date head node {heads[0]}")
        provider.terminate_node(heads[0])
        heads = []
    if heads:
        echo(f"Updating head node {heads[0]} of cluster {config.cluster_name!r}")
        return heads[0]
    _confirm(f"This will create a new cluster {config.cluster_name!r}. Continue?", yes)
    echo(f"Launching a new head node for cluster {config.cluster_name!r}")
    provider.create_node(
        head_type.node_config,
        {
            TAG_RAY_NODE_KIND: NODE_KIND_HEAD,
            TAG_RAY_USER_NODE_TYPE: config.head_node_type,
            TAG_RAY_NODE_NAME: f"ray-{config.cluster_name}-head",
            TAG_RAY_NODE_STATUS: STATUS_UNINITIALIZED,
            TAG_RAY_LAUNCH_CONFIG: launch_hash,
        },
        1,
    )
    head = _wait(
        "the head node to appear", lambda: (_head_nodes(provider) or [None])[0], 300, sleep
    )
    _wait(f"head node {head} to start", lambda: provider.is_running(head), 600, sleep)
    return head


def _head_ip(config: ClusterConfig, provider: NodeProvider, head: str) -> str:
    if config.provider.get("use_internal_ips"):
        return provider.internal_ip(head) or ""
    return provider.external_ip(head) or provider.internal_ip(head) or ""


def _bootstrap_files(config: ClusterConfig, workdir: str) -> dict[str, str]:
    """The config (and key) the head's monitor needs, as extra file mounts."""
    remote_config = config.to_dict()
    mounts = {}
    key = config.auth.get("ssh_private_key")
    if key:
        mounts[BOOTSTRAP_KEY_PATH] = os.path.expanduser(key)
        remote_config["auth"] = {**remote_config["auth"], "ssh_private_key": BOOTSTRAP_KEY_PATH}
    # file_mounts were synced by ray up; the monitor syncs them from the head to workers.
    remote_config["file_mounts"] = {k: k for k in config.file_mounts}
    path = os.path.join(workdir, "ray_bootstrap_config.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(remote_config, f, sort_keys=False)
    mounts[BOOTSTRAP_CONFIG_PATH] = path
    return mounts


def _update_head(
    config: ClusterConfig,
    provider: NodeProvider,
    head: str,
    *,
    no_restart: bool,
    restart_only: bool,
    process_runner,
    echo: Echo,
    sleep,
    ssh_backoff: Backoff,
) -> None:
    with tempfile.TemporaryDirectory(prefix="ray-up-") as workdir:
        mounts = {**config.file_mounts, **_bootstrap_files(config, workdir)}
        update = UpdatePlan(
            file_mounts=mounts,
            initialization_commands=config.initialization_commands,
            setup_commands=config.setup_commands + config.head_setup_commands,
            start_commands=config.head_start_ray_commands,
            runtime_hash=hash_runtime_config(config, head=True),
            env={"RAY_HEAD_IP": provider.internal_ip(head) or ""},
            no_restart=no_restart,
            restart_only=restart_only,
        )
        runner = make_command_runner(config, provider, head, process_runner)
        updater = NodeUpdater(
            head, provider, runner, update, ssh_backoff=ssh_backoff, sleep=sleep, log=echo
        )
        if not updater.run():
            raise ClusterError(
                f"setting up head node {head} failed: {updater.error}\n"
                "Fix the failing command in the cluster YAML and run `ray up` again."
            )


# ---------------------------------------------------------------------------- down
def teardown_cluster(
    config_file: str,
    *,
    yes: bool = False,
    workers_only: bool = False,
    override_cluster_name: str | None = None,
    process_runner: Any = None,
    echo: Echo = click.echo,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Stop Ray and terminate the head (unless workers_only), then the workers.

    The head goes first so its monitor cannot launch replacements for workers
    that are being torn down (it exits once its head is gone).
    """
    config = _load(config_file, override_cluster_name)
    _confirm(f"This will destroy cluster {config.cluster_name!r}. Continue?", yes)
    provider = _provider(config)
    try:
        heads = [] if workers_only else _head_nodes(provider)
        if heads:
            if provider.nodes_outlive_termination:
                _stop_ray(config, provider, heads, process_runner, echo)
            echo(f"Terminating head node {heads[0]}")
            provider.terminate_nodes(heads)
        workers = provider.non_terminated_nodes({TAG_RAY_NODE_KIND: NODE_KIND_WORKER})
        if workers:
            if provider.nodes_outlive_termination:
                _stop_ray(config, provider, workers, process_runner, echo)
            echo(f"Terminating {len(workers)} worker node(s)")
            provider.terminate_nodes(workers)
            _wait(
                "workers to terminate",
                lambda: not provider.non_terminated_nodes({TAG_RAY_NODE_KIND: NODE_KIND_WORKER}),
                300,
                sleep,
            )
    finally:
        provider.cleanup()


def _stop_ray(config, provider, nodes, process_runner, echo: Echo) -> None:
    """``ray stop`` on machines that keep running after "termination" (local provider)."""

    def stop(node_id: str) -> None:
        runner = make_command_runner(config, provider, node_id, process_runner)
        try:
            if isinstance(runner, DockerCommandRunner):
                runner.run_on_host(runner.stop_container_command(), timeout_s=60)
            else:
                runner.run("ray stop", timeout_s=60)
        except CommandFailed as e:
            echo(f"ray stop on {node_id} failed (continuing): {e}")

    threads = [threading.Thread(target=stop, args=(n,)) for n in nodes]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)


# ---------------------------------------------------------------------------- exec & co
def exec_cluster(
    config_file: str,
    cmd: str | None,
    *,
    docker: bool = False,
    screen: bool = False,
    tmux: bool = False,
    stop: bool = False,
    start: bool = False,
    override_cluster_name: str | None = None,
    port_forward: Sequence[int] = (),
    interactive: bool = False,
    process_runner: Any = None,
    echo: Echo = click.echo,
) -> str:
    """Run ``cmd`` on the head node (in the container with ``docker``); return its output."""
    if screen and tmux:
        raise ClusterError("--screen and --tmux cannot be combined: pick one")
    config = _load(config_file, override_cluster_name)
    if start:
        create_or_update_cluster(
            config_file,
            yes=True,
            override_cluster_name=override_cluster_name,
            process_runner=process_runner,
            echo=echo,
        )
    try:
        return _exec_on_head(
            config,
            cmd,
            docker=docker,
            screen=screen,
            tmux=tmux,
            stop=stop,
            port_forward=port_forward,
            interactive=interactive,
            process_runner=process_runner,
            echo=echo,
        )
    finally:
        # --stop tears the cluster down whether or not the command succeeded.
        if stop and not (screen or tmux):
            teardown_cluster(
                config_file,
                yes=True,
                override_cluster_name=override_cluster_name,
                process_runner=process_runner,
                echo=echo,
            )


def _exec_on_head(
    config: ClusterConfig,
    cmd: str | None,
    *,
    docker: bool,
    screen: bool,
    tmux: bool,
    stop: bool,
    port_forward: Sequence[int],
    interactive: bool,
    process_runner: Any,
    echo: Echo,
) -> str:
    provider = _provider(config)
    try:
        head = _require_head(provider, config)
        runner = make_command_runner(config, provider, head, process_runner)
        if docker and not isinstance(runner, DockerCommandRunner):
            raise ClusterError(
                "--docker needs docker.image in the cluster YAML: set it or drop --docker"
            )
        if isinstance(runner, DockerCommandRunner) and not docker:
            runner = runner.ssh
        if stop and (screen or tmux):
            # Detached: the head tears the cluster down itself when the command ends.
            cmd = f"{cmd}; ray down {BOOTSTRAP_CONFIG_PATH} --yes"
        wrapped = _wrap_session(cmd, screen=screen, tmux=tmux) if cmd else "bash"
        try:
            output = runner.run(
                wrapped,
                timeout_s=None,
                port_forward=port_forward,
                interactive=interactive,
                on_output=None if interactive else echo,
            )
        except CommandFailed as e:
            raise ClusterError(
                f"command failed on head node {head} (exit status {e.returncode}): {cmd}"
            )
    finally:
        provider.cleanup()
    return output


def _wrap_session(cmd: str, *, screen: bool, tmux: bool) -> str:
    # Keep the session open after the command so its output can be read on attach.
    keep = shlex.quote(f"{cmd}; exec bash")
    if screen:
        return f"screen -L -dm bash -c {keep}"
    if tmux:
        return f"tmux new -d bash -c {keep}"
    return cmd


def attach_cluster(
    config_file: str,
    *,
    start: bool = False,
    use_tmux: bool = False,
    override_cluster_name: str | None = None,
    new: bool = False,
    process_runner: Any = None,
) -> None:
    if use_tmux:
        cmd = "tmux new" if new else "tmux attach || tmux new"
    else:
        cmd = "screen -L" if new else "screen -L -xRR"
    exec_cluster(
        config_file,
        cmd,
        start=start,
        override_cluster_name=override_cluster_name,
        interactive=True,
        process_runner=process_runner,
    )


def rsync(
    config_file: str,
    source: str,
    target: str,
    *,
    down: bool,
    override_cluster_name: str | None = None,
    process_runner: Any = None,
) -> None:
    config = _load(config_file, override_cluster_name)
    provider = _provider(config)
    try:
        head = _require_head(provider, config)
        runner = provider.get_command_runner(
            head,
            config.auth,
            use_internal_ip=bool(config.provider.get("use_internal_ips")),
            process_runner=process_runner,
        )
        try:
            if down:
                runner.run_rsync_down(source, target)
            else:
                runner.run_rsync_up(source, target)
        except CommandFailed as e:
            raise ClusterError(str(e))
    finally:
        provider.cleanup()


def submit_script(
    config_file: str,
    script: str,
    script_args: Sequence[str] = (),
    **exec_options: Any,
) -> str:
    """Copy ``script`` to the head's home directory and run it with ``python``."""
    if not os.path.isfile(script):
        raise ClusterError(f"script {script!r} not found: pass the path of a Python file")
    start = exec_options.pop("start", False)
    process_runner = exec_options.get("process_runner")
    name = exec_options.get("override_cluster_name")
    if start:
        create_or_update_cluster(
            config_file, yes=True, override_cluster_name=name, process_runner=process_runner,
            echo=exec_options.get("echo", click.echo),
        )  # fmt: skip
    target = f"~/{os.path.basename(script)}"
    rsync(
        config_file,
        script,
        target,
        down=False,
        override_cluster_name=name,
        process_runner=process_runner,
    )
    # "~/" stays unquoted so the remote shell expands it.
    cmd = f"python ~/{shlex.quote(os.path.basename(script))} {shlex.join(script_args)}".strip()
    return exec_cluster(config_file, cmd, **exec_options)


def monitor_cluster(
    config_file: str,
    *,
    lines: int = 100,
    override_cluster_name: str | None = None,
    process_runner: Any = None,
) -> None:
    """Follow the monitor's log on the head node (until interrupted)."""
    exec_cluster(
        config_file,
        f"tail -n {int(lines)} -f {MONITOR_LOG_GLOB}",
        override_cluster_name=override_cluster_name,
        process_runner=process_runner,
    )


def get_head_node_ip(config_file: str, override_cluster_name: str | None = None) -> str:
    config = _load(config_file, override_cluster_name)
    provider = _provider(config)
    try:
        return _head_ip(config, provider, _require_head(provider, config))
    finally:
        provider.cleanup()
