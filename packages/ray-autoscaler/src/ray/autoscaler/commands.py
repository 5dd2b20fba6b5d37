"""``ray up/down/exec/attach/submit/rsync-up/rsync-down/get-head-ip/monitor`` as click commands.

ray-core's ``ray`` group loads each from the ``ray.cli`` entry-point group;
``python -m ray.autoscaler`` runs the same commands without ray-core's CLI. The
work itself is in :mod:`ray.autoscaler.launcher`, re-exported here.
"""

from __future__ import annotations

import click

from ray.autoscaler.launcher import (
    BOOTSTRAP_CONFIG_PATH,
    BOOTSTRAP_KEY_PATH,
    MONITOR_LOG_GLOB,
    ClusterError,
    attach_cluster,
    create_or_update_cluster,
    exec_cluster,
    get_head_node_ip,
    monitor_cluster,
    rsync,
    submit_script,
    teardown_cluster,
)

__all__ = [
    "BOOTSTRAP_CONFIG_PATH",
    "BOOTSTRAP_KEY_PATH",
    "COMMANDS",
    "MONITOR_LOG_GLOB",
    "ClusterError",
    "attach_cluster",
    "cli",
    "create_or_update_cluster",
    "exec_cluster",
    "get_head_node_ip",
    "monitor_cluster",
    "rsync",
    "submit_script",
    "teardown_cluster",
]

# ---------------------------------------------------------------------------- click
_CLUSTER_NAME = click.option(
    "--cluster-name", "-n", default=None, help="Override the configured cluster name."
)
_YES = click.option("--yes", "-y", is_flag=True, default=False, help="Don't ask for confirmation.")
_CONFIG = click.argument("cluster_config_file", type=str)


@click.command("up")
@_CONFIG
@click.option(
    "--no-restart",
    is_flag=True,
    default=False,
    help="Whether to skip restarting Ray services during the update. "
    "This avoids interrupting running jobs.",
)
@click.option(
    "--restart-only",
    is_flag=True,
    default=False,
    help="Whether to skip running setup commands and only restart Ray. "
    "This cannot be used with 'no-restart'.",
)
@click.option(
    "--min-workers", type=int, default=None, help="Override the configured min worker node count."
)
@click.option(
    "--max-workers", type=int, default=None, help="Override the configured max worker node count."
)
@_CLUSTER_NAME
@_YES
def up_cmd(
    cluster_config_file, no_restart, restart_only, min_workers, max_workers, cluster_name, yes
):
    """Create or update a Ray cluster."""
    create_or_update_cluster(
        cluster_config_file,
        override_min_workers=min_workers,
        override_max_workers=max_workers,
        no_restart=no_restart,
        restart_only=restart_only,
        yes=yes,
        override_cluster_name=cluster_name,
    )


@click.command("down")
@_CONFIG
@click.option("--workers-only", is_flag=True, default=False, help="Only destroy the workers.")
@_YES
@_CLUSTER_NAME
def down_cmd(cluster_config_file, workers_only, yes, cluster_name):
    """Tear down a Ray cluster."""
    teardown_cluster(
        cluster_config_file, yes=yes, workers_only=workers_only, override_cluster_name=cluster_name
    )


def _exec_options(fn):
    for option in reversed(
        [
            click.option("--docker", is_flag=True, default=False, help="Run the command in the docker container specified in the config."),
            click.option("--stop", is_flag=True, default=False, help="Stop the cluster after the command finishes running."),
            click.option("--start", is_flag=True, default=False, help="Start the cluster if needed."),
            click.option("--screen", is_flag=True, default=False, help="Run the command in a screen."),
            click.option("--tmux", is_flag=True, default=False, help="Run the command in tmux."),
            _CLUSTER_NAME,
            click.option("--port-forward", "-p", type=int, multiple=True, help="Port to forward (local port = remote port)."),
        ]
    ):  # fmt: skip
        fn = option(fn)
    return fn


@click.command("exec")
@_CONFIG
@click.argument("cmd", required=True, type=str)
@_exec_options
def exec_cmd(
    cluster_config_file, cmd, docker, stop, start, screen, tmux, cluster_name, port_forward
):
    """Run a shell command on the head node of a Ray cluster."""
    exec_cluster(
        cluster_config_file,
        cmd,
        docker=docker,
        screen=screen,
        tmux=tmux,
        stop=stop,
        start=start,
        override_cluster_name=cluster_name,
        port_forward=port_forward,
    )


@click.command("submit")
@_CONFIG
@click.argument("script", required=True, type=str)
@click.argument("script_args", nargs=-1, type=str)
@_exec_options
def submit_cmd(
    cluster_config_file,
    script,
    script_args,
    docker,
    stop,
    start,
    screen,
    tmux,
    cluster_name,
    port_forward,
):
    """Upload a Python script to the head node and run it there."""
    submit_script(
        cluster_config_file,
        script,
        script_args,
        docker=docker,
        screen=screen,
        tmux=tmux,
        stop=stop,
        start=start,
        override_cluster_name=cluster_name,
        port_forward=port_forward,
    )


@click.command("attach")
@_CONFIG
@click.option("--start", is_flag=True, default=False, help="Start the cluster if needed.")
@click.option("--tmux", is_flag=True, default=False, help="Run the command in tmux.")
@_CLUSTER_NAME
@click.option("--new", "-N", is_flag=True, help="Force creation of a new screen.")
def attach_cmd(cluster_config_file, start, tmux, cluster_name, new):
    """Open an interactive screen (or tmux) session on the head node."""
    attach_cluster(
        cluster_config_file, start=start, use_tmux=tmux, override_cluster_name=cluster_name, new=new
    )


@click.command("rsync-up")
@_CONFIG
@click.argument("source", required=True, type=str)
@click.argument("target", required=True, type=str)
@_CLUSTER_NAME
def rsync_up_cmd(cluster_config_file, source, target, cluster_name):
    """Upload local files to the head node."""
    rsync(cluster_config_file, source, target, down=False, override_cluster_name=cluster_name)


@click.command("rsync-down")
@_CONFIG
@click.argument("source", required=True, type=str)
@click.argument("target", required=True, type=str)
@_CLUSTER_NAME
def rsync_down_cmd(cluster_config_file, source, target, cluster_name):
    """Download files from the head node."""
    rsync(cluster_config_file, source, target, down=True, override_cluster_name=cluster_name)


@click.command("get-head-ip")
@_CONFIG
@_CLUSTER_NAME
def get_head_ip_cmd(cluster_config_file, cluster_name):
    """Print the head node's IP address."""
    click.echo(get_head_node_ip(cluster_config_file, cluster_name))


@click.command("monitor")
@_CONFIG
@click.option("--lines", type=int, default=100, help="Lines of history to show first.")
@_CLUSTER_NAME
def monitor_cmd(cluster_config_file, lines, cluster_name):
    """Follow the autoscaler's log on the head node."""
    monitor_cluster(cluster_config_file, lines=lines, override_cluster_name=cluster_name)


COMMANDS = [
    up_cmd,
    down_cmd,
    exec_cmd,
    submit_cmd,
    attach_cmd,
    rsync_up_cmd,
    rsync_down_cmd,
    get_head_ip_cmd,
    monitor_cmd,
]


def cli() -> click.Group:
    """A ``ray``-like group with just these commands (``python -m ray.autoscaler``)."""
    group = click.Group("ray", help="Ray cluster launcher (ray.autoscaler).")
    for command in COMMANDS:
        group.add_command(command)
    # The 0.7 docs spell some of them with underscores.
    group.add_command(rsync_up_cmd, "rsync_up")
    group.add_command(rsync_down_cmd, "rsync_down")
    group.add_command(get_head_ip_cmd, "get_head_ip")
    return group
