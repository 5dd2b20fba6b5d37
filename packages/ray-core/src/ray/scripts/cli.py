"""The ``ray`` command: start/stop nodes, and the plug-in commands other packages add.

ray-autoscaler (and any other distribution) registers more subcommands through
the ``ray.cli`` entry-point group (each entry point is a click command).
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import signal
import sys
import time
from importlib.metadata import entry_points

import click
import psutil


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli():
    """ray: start and manage clusters."""


def _parse_resources(text: str | None) -> dict:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"--resources must be a JSON object: {exc}") from None
    if not isinstance(value, dict):
        raise click.BadParameter('--resources must be a JSON object, e.g. \'{"GPU_TYPE": 2}\'')
    return value


@cli.command()
@click.option("--head", is_flag=True, help="Start the head node (Redis/GCS + raylet).")
@click.option("--redis-address", "--address", "address", default=None,
              help="Address of the head's Redis (IP:PORT), to join a cluster.")
@click.option("--redis-port", "--port", "redis_port", type=int, default=None,
              help="Port of the primary Redis shard on the head (default 6379).")
@click.option("--redis-shard-ports", default=None, help="Comma-separated ports of extra shards.")
@click.option("--num-redis-shards", type=int, default=None, help="Extra Redis shards.")
@click.option("--redis-max-clients", type=int, default=None)
@click.option("--redis-password", default=None, envvar="RAY_REDIS_PASSWORD",
              help="The cluster secret: Redis' password and the key every internal "
                   "connection authenticates with. --head makes one up when not given; "
                   "joining nodes on the head's machine find it, others must be given it.")
@click.option("--redis-max-memory", type=int, default=None)
@click.option("--node-ip-address", default=None, help="This node's IP address.")
@click.option("--object-manager-port", type=int, default=None)
@click.option("--node-manager-port", type=int, default=0)
@click.option("--num-cpus", type=float, default=None)
@click.option("--num-gpus", type=float, default=None)
@click.option("--resources", default=None, help="Custom resources as JSON.")
@click.option("--object-store-memory", type=int, default=None)
@click.option("--plasma-directory", default=None)
@click.option("--object-spilling-directory", default=None,
              help="Where this node spills objects when its store fills (default: the "
                   "session directory).")
@click.option("--huge-pages", is_flag=True)
@click.option("--include-webui", "--include-dashboard", "include_webui", is_flag=False,
              flag_value="true", default=None,
              help="The web dashboard and job API on the head: on by default (as in Ray 2.x); "
                   "--include-dashboard false turns it off.")
@click.option("--webui-host", "--dashboard-host", "webui_host", default="127.0.0.1",
              help="Interface the dashboard binds (0.0.0.0: every interface).")
@click.option("--dashboard-port", type=int, default=8265,
              help="Dashboard port; the next free one is used if it is taken.")
@click.option("--block", is_flag=True, help="Block until the started processes exit.")
@click.option("--plasma-store-socket-name", default=None)
@click.option("--raylet-socket-name", default=None)
@click.option("--temp-dir", default=None, help="Root of session directories (default /tmp/ray).")
@click.option("--include-java", is_flag=True, help="Not supported (Python-only runtime).")
@click.option("--java-worker-options", default=None)
@click.option("--load-code-from-local", is_flag=True)
@click.option("--internal-config", default=None, help="JSON overrides of runtime constants.")
@click.option("--autoscaling-config", default=None, help="Autoscaler config (head only).")
@click.option("--no-redirect-worker-output", is_flag=True)
@click.option("--no-redirect-output", is_flag=True)
@click.option("--redis-persist", is_flag=True,
              help="Persist GCS state with Redis' append-only file in "
                   "<temp-dir>/gcs/<ip>_<port>: a head restarted at the same address recovers "
                   "the cluster (ray stop removes it).")
def start(head, address, redis_port, redis_shard_ports, num_redis_shards, redis_max_clients,
          redis_password, redis_max_memory, node_ip_address, object_manager_port,
          node_manager_port, num_cpus, num_gpus, resources, object_store_memory,
          plasma_directory, object_spilling_directory, huge_pages, include_webui, webui_host,
          dashboard_port, block, plasma_store_socket_name, raylet_socket_name, temp_dir, include_java,
          java_worker_options, load_code_from_local, internal_config, autoscaling_config,
          no_redirect_worker_output, no_redirect_output, redis_persist):
    """Start ray processes on this machine (head with --head, else join --address)."""
    from ray._private import node as node_mod
    from ray._private.config import build_config, with_spilling_directory
    from ray._private.gcs import connect

    if include_java:
        raise click.UsageError("Java workers are not supported by this Python-only runtime.")
    if head == bool(address):
        raise click.UsageError(
            "Pass either --head (start a new cluster) or --address=IP:PORT (join one)."
        )
    from ray._private import auth, tls

    try:
        tls.check()  # RAY_USE_TLS and its certificate files, before anything starts
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    config = build_config(internal_config)
    if object_spilling_directory is not None:
        try:
            config = with_spilling_directory(config, object_spilling_directory)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--object-spilling-directory")
    if load_code_from_local:
        import dataclasses

        config = dataclasses.replace(config, load_code_from_local=True)
    node_ip = node_ip_address or node_mod.get_node_ip_address()
    root = temp_dir or node_mod.DEFAULT_TEMP_DIR
    recovered = None
    running_gcs = False
    if head:
        head_address = f"{_connect_host(node_ip)}:{redis_port or 6379}"
        # A head restarted at its old address keeps the cluster's secret (its nodes and
        # drivers still hold it); `ray stop` forgets it, and a new cluster gets a new one.
        redis_password = redis_password or auth.load_secret(head_address) or auth.new_secret()
        running_gcs = _running_gcs(head_address, redis_password, config)
        persist_dir = _persist_dir(root, head_address) if redis_persist else None
    else:
        redis_password = auth.resolve_secret(address, redis_password)
    session_dir = node_mod.new_session_dir(temp_dir)
    procs = node_mod.NodeProcesses(session_dir, owned_by_driver=False,
                                   redirect_output=not no_redirect_output)
    try:
        if head and running_gcs:
            address = head_address  # its Redis outlived the previous head: rejoin it
            recovered = f"the GCS still running at {address}"
        elif head:
            reloading = persist_dir is not None and _has_persisted_state(persist_dir)
            address = procs.start_redis(
                host=node_ip, port=redis_port or 6379, password=redis_password,
                max_memory=redis_max_memory, max_clients=redis_max_clients,
                persist_dir=persist_dir,
            )
            if reloading:
                _check_no_live_head(address, redis_password, config)
                recovered = f"the append-only file in {persist_dir}"
            if persist_dir is not None:  # `ray stop` removes it with the cluster
                with open(os.path.join(session_dir, "gcs_persist_dir"), "w") as f:
                    f.write(persist_dir)
        if head and not running_gcs:
            shard_ports = [int(p) for p in redis_shard_ports.split(",")] if redis_shard_ports \
                else [None] * (num_redis_shards or 0)
            shards = [
                procs.start_redis(host=node_ip, port=port, password=redis_password,
                                  max_memory=redis_max_memory, name=f"redis-shard_{i}")
                for i, port in enumerate(shard_ports)
            ]
            gcs = connect(address, redis_password)
            from ray._private.gcs import keys

            gcs.set(keys.REDIS_SHARDS, json.dumps(shards).encode())
            if autoscaling_config:
                gcs.set(keys.kv("autoscaler", "config_path"), autoscaling_config.encode())
            if load_code_from_local:  # drivers that join export code by reference
                gcs.set(keys.kv("cluster", "load_code_from_local"), b"1")
            gcs.close()
        if head and running_gcs and autoscaling_config:
            gcs = connect(address, redis_password)
            gcs.set(_keys().kv("autoscaler", "config_path"), autoscaling_config.encode())
            gcs.close()
        total = {"CPU": num_cpus if num_cpus is not None else (os.cpu_count() or 1)}
        if num_gpus:
            total["GPU"] = num_gpus
        total.update(_parse_resources(resources))
        store_bytes = object_store_memory or node_mod.default_object_store_memory(config)
        info = procs.start_raylet(
            node_id=node_mod.new_node_id(), node_ip=node_ip, gcs_address=address,
            redis_password=redis_password, resources=total,
            object_store_memory=int(store_bytes), config=config,
            plasma_directory=plasma_directory, huge_pages=huge_pages,
            node_manager_port=node_manager_port or 0,
            object_manager_port=object_manager_port or 0, head=head,
            raylet_socket=raylet_socket_name, plasma_socket=plasma_store_socket_name,
            redirect_worker_output=not no_redirect_worker_output,
        )
    except Exception as exc:
        procs.kill_all()
        raise click.ClickException(str(exc)) from None
    if head and autoscaling_config:
        if not procs.start_monitor(gcs_address=address, config_path=autoscaling_config,
                                   redis_password=redis_password):
            click.echo("warning: --autoscaling-config given but ray-autoscaler is not "
                       "installed (pip install packages/ray-autoscaler); no autoscaling.",
                       err=True)
    wants_dashboard = _flag_value("--include-webui", include_webui)
    if include_webui is not None and wants_dashboard and not head:
        click.echo("warning: --include-webui only applies to the head node.", err=True)
    elif head and (include_webui is None or wants_dashboard):
        _start_dashboard(procs, address, node_ip, redis_password, webui_host, dashboard_port)
    with open(os.path.join(root, "ray_current_cluster"), "w") as f:
        f.write(address)
    if head:
        auth.save_secret(address, redis_password)
        with open(os.path.join(session_dir, "gcs_address"), "w") as f:  # ray stop forgets it
            f.write(address)
        if recovered:
            click.echo(f"Recovered the cluster's state from {recovered}: this head takes over "
                       "from the previous one (see docs/architecture.md, 'Head recovery').")
        pw = f" --redis-password='{redis_password}'"
        click.echo(
            f"\nStarted ray on this node (head). The cluster address is {address}\n\n"
            "To connect to this cluster from Python:\n"
            f"    import ray\n    ray.init(address='{address}'"
            + ")\n(on this machine the cluster secret is found automatically; elsewhere add "
            f"redis_password='{redis_password}')\n\nTo add another node to this cluster, run on it:\n"
            f"    ray start --address='{address}'{pw}\n\n"
            "To stop ray on this machine: ray stop\n"
        )
    else:
        click.echo(f"Started ray on this node ({node_ip}), joined the cluster at {address}.")
    click.echo(f"Session directory: {session_dir}; raylet pid {info['pid']}")
    if block:
        _block(procs)


def _keys():
    from ray._private.gcs import keys

    return keys


def _connect_host(node_ip: str) -> str:
    return "127.0.0.1" if node_ip in ("0.0.0.0", "") else node_ip


def _persist_dir(root: str, address: str) -> str:
    """Where the head at ``address`` keeps the GCS's append-only file: under the temp
    root, not the session, so a head restarted at the same address reloads it."""
    return os.path.join(root, "gcs", address.replace(":", "_"))


def _has_persisted_state(persist_dir: str) -> bool:
    return any(os.scandir(persist_dir)) if os.path.isdir(persist_dir) else False


def _running_gcs(address: str, password: str, config) -> bool:
    """Whether this cluster's GCS still runs at ``address`` (the previous head's raylet
    died, its Redis did not): the new head rejoins it. Anything else listening there is
    an error naming it; nothing listening: False."""
    import socket

    from ray._private.gcs import connect
    from ray.exceptions import AuthenticationError

    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=1.0):
            pass
    except OSError:
        return False
    try:
        gcs = connect(address, password, 5.0)
    except AuthenticationError:
        raise click.ClickException(
            f"port {port} on {host} is taken by a Redis that refuses this cluster secret: "
            "another cluster's GCS runs there. Stop it (ray stop) or pick another --port.")
    except Exception as exc:  # noqa: BLE001 - not a Redis at all: say what is in the way
        raise click.ClickException(f"port {port} on {host} is in use ({exc}); pick another "
                                   "--port or stop what listens there.") from None
    try:
        if not gcs.hgetall_obj(_keys().NODES):
            raise click.ClickException(f"port {port} on {host} is taken by a Redis that is "
                                       "not a Ray GCS; pick another --port.")
    finally:
        gcs.close()
    _check_no_live_head(address, password, config)
    return True


def _check_no_live_head(address: str, password: str, config) -> None:
    """Refuse to start a second head next to a live one: a head listed alive whose raylet
    still runs on this machine, or whose heartbeat is fresh."""
    from ray._private.gcs import connect

    keys = _keys()
    host = address.rpartition(":")[0]
    gcs = connect(address, password, 10.0)
    try:
        nodes = gcs.hgetall_obj(keys.NODES)
        beats = gcs.hgetall(keys.NODE_HEARTBEATS)
    finally:
        gcs.close()
    now = time.time()
    for node_id, info in nodes.items():
        if not info.get("is_head") or not info.get("alive", True):
            continue
        age = now - float(beats.get(node_id, b"0") or 0)
        if info.get("node_ip") == host:  # on this machine: its process says it all
            live = False
            with contextlib.suppress(psutil.Error, ValueError, TypeError):
                proc = psutil.Process(int(info.get("pid")))
                # a killed raylet not yet reaped by its parent lingers as a zombie
                live = (proc.status() != psutil.STATUS_ZOMBIE
                        and proc.create_time() <= info.get("start_time", now) + 1.0)
        else:
            live = age < config.heartbeat_timeout_s
        if live:
            raise click.ClickException(
                f"the cluster at {address} still has a live head node ({node_id[:8]}, pid "
                f"{info.get('pid')}, last heartbeat {age:.1f} s ago): a second head would "
                "split it. Stop that one first (ray stop on its machine), or join this "
                f"cluster as a worker node: ray start --address={address}")


def _flag_value(name: str, value: str | None) -> bool:
    if value is None:
        return False
    text = value.strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise click.BadParameter(f"{name} takes true or false (or nothing), got {value!r}")


def _start_dashboard(procs, address, node_ip, redis_password, host, port):
    from ray import dashboard

    try:
        info, proc = dashboard.start(procs.session_dir, gcs_address=address, node_ip=node_ip,
                                     owned_by_driver=False, redis_password=redis_password,
                                     host=host, port=port)
    except Exception as exc:  # the cluster is fine without it: say why and go on
        click.echo(f"warning: the dashboard did not start: {exc}", err=True)
        return
    procs.procs.append(("dashboard", proc))
    procs._write_pids()
    click.echo(f"Dashboard: {info['url']}")


def _block(procs):
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    try:
        while not stop and all(p.poll() is None for _, p in procs.procs):
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    procs.kill_all()


def _our_pids(temp_dir: str | None) -> list[int]:
    from ray._private.node import DEFAULT_TEMP_DIR

    root = temp_dir or DEFAULT_TEMP_DIR
    pids = []
    for path in glob.glob(os.path.join(root, "session_*", "pids.json")):
        with contextlib.suppress(OSError, ValueError), open(path) as f:
            pids.extend(json.load(f).values())
    return pids


_MARKERS = ("ray::", "ray._private", "valkey-server", "redis-server", "ray.autoscaler",
            "ray.dashboard")


@cli.command()
@click.option("--temp-dir", default=None, help="Only stop nodes started with this temp dir.")
@click.option("-f", "--force", is_flag=True, help="SIGKILL at once.")
@click.option("-g", "--grace-period", type=float, default=5.0)
def stop(temp_dir, force, grace_period):
    """Stop the ray processes that `ray start` started on this machine."""
    victims = []
    for pid in set(_our_pids(temp_dir)):
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(pid)
            cmd = " ".join(proc.cmdline())
            if any(m in cmd for m in _MARKERS):
                victims.append(proc)
    for proc in victims:
        with contextlib.suppress(psutil.Error):
            proc.send_signal(signal.SIGKILL if force else signal.SIGTERM)
    gone, alive = psutil.wait_procs(victims, timeout=grace_period)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(alive, timeout=2)
    from ray._private.node import DEFAULT_TEMP_DIR

    root = temp_dir or DEFAULT_TEMP_DIR
    with contextlib.suppress(OSError):
        os.unlink(os.path.join(root, "ray_current_cluster"))
    _forget_stopped_secrets(root, {p.pid for p in victims})
    from ray._private.raylet.spilling import remove_orphaned_spill_dirs

    for session in glob.glob(os.path.join(root, "session_*")):
        remove_orphaned_spill_dirs(session)  # spill files of raylets that are gone
    click.echo(f"Stopped {len(victims)} ray processes.")


def _forget_stopped_secrets(root: str, stopped: set[int]) -> None:
    """Delete the secret files, and the persisted GCS state (``--redis-persist``), of heads
    whose Redis this ``ray stop`` just stopped: the cluster is over. (A head that crashed
    keeps both, so ``ray start --head`` at its address recovers the cluster.)"""
    import shutil

    from ray._private import auth

    for pids_path in glob.glob(os.path.join(root, "session_*", "pids.json")):
        session = os.path.dirname(pids_path)
        with contextlib.suppress(OSError, ValueError):
            with open(pids_path) as f:
                pids = json.load(f)
            if not any(name.startswith("redis-") and pid in stopped
                       for name, pid in pids.items()):
                continue
            with contextlib.suppress(OSError), open(
                    os.path.join(session, "gcs_persist_dir")) as f:
                persist_dir = f.read().strip()
                if persist_dir.startswith(os.path.join(root, "gcs", "")):
                    shutil.rmtree(persist_dir, ignore_errors=True)
            with open(os.path.join(session, "gcs_address")) as f:
                auth.forget_secret(f.read().strip())


def _connect_gcs(address, redis_password):
    """A GCS client for commands that only read cluster state (no driver, no raylet)."""
    from ray._private.driver import _latest_cluster_address, _resolve_address
    from ray._private.gcs import connect

    address = address or "auto"
    if address == "auto" and os.environ.get("RAY_ADDRESS", "").startswith("http"):
        address = _latest_cluster_address() or address  # $RAY_ADDRESS names the dashboard
    try:
        return connect(_resolve_address(address), redis_password)
    except Exception as exc:
        raise click.ClickException(str(exc)) from None


@cli.command()
@click.option("--address", default="auto", help="Cluster address (default: the one on this machine).")
@click.option("--redis-password", default=None, envvar="RAY_REDIS_PASSWORD")
@click.option("--transfers", is_flag=True, help="Object transfers instead of tasks.")
@click.argument("filename", required=False)
def timeline(address, redis_password, transfers, filename):
    """Write a Chrome-tracing timeline of the cluster's tasks to FILENAME."""
    from ray._private import chrome_trace, state

    gcs = _connect_gcs(address, redis_password)
    try:
        events = state.events_from_gcs(gcs)
    finally:
        gcs.close()
    trace = (chrome_trace.transfer_trace if transfers else chrome_trace.task_trace)(events)
    filename = filename or f"/tmp/ray-timeline-{time.strftime('%Y-%m-%d_%H-%M-%S')}.json"
    with open(filename, "w") as f:
        json.dump(trace, f)
    click.echo(f"Trace of {len(events)} events written to {filename}: open it in "
               "chrome://tracing or https://ui.perfetto.dev (turn on flow events for arrows).")


@cli.command()
@click.option("--address", default="auto", help="Cluster address (default: the one on this machine).")
@click.option("--redis-password", default=None, envvar="RAY_REDIS_PASSWORD")
@click.option("--timeout-s", type=float, default=2.0, help="How long to wait for replies.")
@click.option("--sort-by", type=click.Choice(["owner", "pid", "size", "type"]), default="size")
@click.option("--stats-only", is_flag=True,
              help="Only the object store stats across all nodes (use, spilled, restored).")
@click.option("--num-entries", type=int, default=None, help="Show at most this many references.")
@click.option("--json", "as_json", is_flag=True,
              help="Print JSON (reference rows, or with --stats-only the summed stats).")
def memory(address, redis_password, timeout_s, sort_by, stats_only, num_entries, as_json):
    """Live object references in the cluster (size, owner, why each is alive), then the
    object store stats across all nodes (use, spilled and restored objects)."""
    import dataclasses

    from ray._private import memory_report, state

    gcs = _connect_gcs(address, redis_password)
    try:
        if as_json and stats_only:
            click.echo(json.dumps(dataclasses.asdict(memory_report.cluster_store_stats(gcs))))
        elif as_json:
            rows = state.memory_table(gcs, timeout_s=timeout_s)
            rows.sort(key=memory_report.SORT_KEYS[sort_by])
            click.echo(json.dumps(rows[:num_entries] if num_entries is not None else rows,
                                  indent=1))
        else:
            click.echo(memory_report.memory_report(gcs, stats_only=stats_only, sort_by=sort_by,
                                                   num_entries=num_entries, timeout_s=timeout_s))
    finally:
        gcs.close()


_STACK_MARKERS = ("ray._private", "ray.dashboard", "ray.autoscaler")


@cli.command()
def stack():
    """Print the Python stack of every ray process on this machine (uses py-spy)."""
    import shutil
    import subprocess

    spy = shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable), "py-spy")
    if not os.path.exists(spy):
        raise click.ClickException("ray stack needs py-spy: pip install 'ray-core[debug]' (or py-spy)")
    found = 0
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmd = " ".join(proc.info["cmdline"] or [])
        if proc.info["pid"] == os.getpid():
            continue
        if any(m in cmd for m in _STACK_MARKERS) or cmd.startswith("ray::"):
            found += 1
            click.echo(f"--- {proc.info['pid']}: {cmd[:100]}")
            out = subprocess.run([spy, "dump", "--pid", str(proc.info["pid"])],
                                 capture_output=True, text=True)
            click.echo(out.stdout or out.stderr)
    if not found:
        click.echo("No ray processes on this machine.")


def _add_core_commands():
    """The operations commands of ray-core (status, jobs, the state CLI, logs)."""
    from ray.scripts import job_cli, state_cli, status_cli

    for name, command in {**state_cli.COMMANDS, **job_cli.COMMANDS,
                          "status": status_cli.status}.items():
        cli.add_command(command, name)


_add_core_commands()


def _load_plugins():
    for ep in entry_points(group="ray.cli"):
        if ep.name in cli.commands:
            continue
        try:
            cli.add_command(ep.load(), ep.name)
        except Exception as exc:  # a broken plug-in must not break `ray start`
            click.echo(f"warning: cannot load `ray {ep.name}` from {ep.value}: {exc}",
                       err=True)


def main():
    _load_plugins()
    cli()


if __name__ == "__main__":
    main()
