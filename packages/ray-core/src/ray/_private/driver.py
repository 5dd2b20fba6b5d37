"""Connect a driver: start an embedded cluster or join one, then build its runtime."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
import time

from ray._private import auth, gc_tuning
from ray._private import ids as ids_mod
from ray._private import node as node_mod
from ray._private.gcs import connect, keys
from ray._private.runtime.core_worker import MODE_DRIVER, CoreWorker
from ray.exceptions import RayConnectionError
from ray.experimental import tqdm_ray

logger = logging.getLogger("ray")


def _resolve_address(address: str | None, temp_dir: str | None = None) -> str | None:
    if address in (None, ""):
        # As Ray 2.x: a plain ray.init() joins the cluster the last `ray start` on this
        # machine recorded, if it still runs; else it starts its own.
        latest = _latest_cluster_address(temp_dir)
        if latest is not None and _accepts_connections(latest):
            logger.info("Connecting to the running Ray cluster at %s (started by `ray start`)",
                        latest)
            return latest
        return None
    if address == "local":
        return None
    if address == "auto":
        address = os.environ.get("RAY_ADDRESS") or _latest_cluster_address(temp_dir)
        if address is None:
            raise RayConnectionError(
                "ray.init(address='auto') found no running cluster on this machine: start one "
                "with `ray start --head` or pass its address."
            )
    if address.startswith("ray://"):
        address = address[len("ray://"):]
    return address


def _latest_cluster_address(temp_dir: str | None = None) -> str | None:
    path = os.path.join(temp_dir or node_mod.DEFAULT_TEMP_DIR, "ray_current_cluster")
    with contextlib.suppress(OSError), open(path) as f:
        return f.read().strip() or None
    return None


def _accepts_connections(address: str, timeout_s: float = 0.5) -> bool:
    """Whether something listens at ``host:port`` (a cluster stopped without `ray stop`
    leaves its address file behind)."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False


def start_driver(address, kwargs: dict, config):
    address = _resolve_address(address, kwargs.get("temp_dir") or kwargs.get("_temp_dir"))
    if kwargs.get("include_dashboard") or kwargs.get("include_webui"):
        from ray import dashboard

        dashboard.check_address(kwargs.get("dashboard_host") or kwargs.get("webui_host"),
                                kwargs.get("dashboard_port"))
    password = auth.resolve_secret(address, kwargs.get("redis_password")
                                   or kwargs.get("_redis_password"))
    procs = None
    if address is None:
        password = password or auth.new_secret()  # embedded: a fresh secret per cluster
        auth.set_cluster_secret(password)
        procs, node_info, gcs_address = _start_embedded(kwargs, config, password)
    else:
        for key in ("num_cpus", "num_gpus", "resources", "object_store_memory",
                    "object_spilling_directory"):
            if kwargs.get(key) is not None:
                raise ValueError(
                    f"When connecting to an existing cluster, {key} must not be provided: "
                    "resources and spilling are set by `ray start` on each node "
                    "(--object-spilling-directory)."
                )
        gcs_address = address
        node_info = None
    auth.set_cluster_secret(password)
    try:
        gcs = connect(gcs_address, password or "", config.gcs_connect_timeout_s)
    except Exception:
        if procs is not None:
            procs.kill_all()
        raise
    if node_info is None:
        node_info = _local_node_from_gcs(gcs, kwargs.get("node_ip_address"), gcs_address)
        if not config.load_code_from_local and gcs.get(
                keys.kv("cluster", "load_code_from_local")):
            import dataclasses

            config = dataclasses.replace(config, load_code_from_local=True)
    elif shards := getattr(procs, "shard_addresses", None):  # set by _start_embedded
        import json

        gcs.set(keys.REDIS_SHARDS, json.dumps(shards).encode())
    job_id = ids_mod.JobID.from_int(gcs.incr(keys.JOB_COUNTER))
    job_config = kwargs.get("job_config")
    core = CoreWorker(
        mode=MODE_DRIVER, node=node_info, job_id=job_id, config=config, gcs=gcs,
        object_id_seed=kwargs.get("object_id_seed"),
        namespace=kwargs.get("namespace") or "default",
        detached_actors_by_default=job_config is not None and job_config.detached_by_default,
    )
    core.bind_raylet("register_driver", core.job.binary, os.getpid(), core.address.to_wire())
    # The job's workers put sys_path first on theirs (JobState.bind).
    sys_path = (job_config.worker_sys_path() if job_config is not None else []) \
        + _driver_sys_path()
    gcs.hset_obj(keys.JOBS, job_id.hex(), {
        "job_id": job_id.hex(), "driver_pid": os.getpid(), "node_ip": node_info["node_ip"],
        "start_time": time.time(), "alive": True, "sys_path": sys_path,
        "metadata": dict(job_config.metadata) if job_config is not None else {},
        "namespace": core.job.namespace,
        # JobConfig(default_actor_lifetime=): the job's workers create actors this way too.
        "detached_actors_by_default": core.job.detached_actors_by_default,
    })
    core.node_processes = procs
    if procs is not None and password:
        # A second driver on this machine joins with ray.init(address=...): it finds the
        # secret in the same-user-only file `ray start --head` writes.
        auth.save_secret(gcs_address, password)
        core.add_shutdown_hook(lambda: auth.forget_secret(gcs_address))
    core.address_info = {
        "node_ip_address": node_info["node_ip"],
        "redis_address": gcs_address,
        "address": gcs_address,
        "gcs_address": gcs_address,
        "object_store_address": node_info["plasma_socket"],
        "plasma_store_socket_name": node_info["plasma_socket"],
        "raylet_socket_name": node_info["raylet_socket"],
        "session_dir": node_info["session_dir"],
        "node_id": node_info["node_id"],
        "webui_url": None,
        "dashboard_url": None,
        "job_id": job_id.hex(),
    }
    if kwargs.get("log_to_driver", True):
        _subscribe_output(core)
    _subscribe_errors(core)
    try:
        _connect_dashboard(core, procs, gcs_address, password, kwargs)
    except BaseException:
        core.shutdown()  # do not leave a half-started cluster behind
        raise
    if config.gc_freeze_startup_heap and gc_tuning.freeze_startup_heap(collect_first=True):
        core.add_shutdown_hook(gc_tuning.thaw)
    return core


def _connect_dashboard(core, procs, gcs_address, password, kwargs):
    """Start the dashboard if asked (on an existing cluster: unless it has one); record its URL."""
    from ray import dashboard

    info = dashboard.lookup(core.gcs)
    wanted = kwargs.get("include_dashboard")
    if wanted is None:
        wanted = kwargs.get("include_webui")
    if wanted and (info is None or procs is not None):
        info, proc = dashboard.start(
            core.node["session_dir"], gcs_address=gcs_address, node_ip=core.node_ip,
            owned_by_driver=True, redis_password=password,
            host=kwargs.get("dashboard_host") or kwargs.get("webui_host"),
            port=kwargs.get("dashboard_port"),
        )
        if procs is not None:  # stops with the embedded cluster
            procs.procs.append(("dashboard", proc))
            procs._write_pids()
        else:  # started by this driver on a joined cluster: stops with it
            core.dashboard_process = proc
            core.add_shutdown_hook(lambda: dashboard.stop(proc))
    if info is not None:
        core.address_info["webui_url"] = info["url"]
        core.address_info["dashboard_url"] = info["url"].split("://", 1)[-1]


def _driver_sys_path() -> list[str]:
    """Where the driver's own modules live (its script's folder, else the working
    directory): the job's workers put it on their sys.path, so a task can import a
    module that sits next to the script, as in Ray."""
    main = sys.modules.get("__main__")
    script = getattr(main, "__file__", None)
    folder = os.path.dirname(os.path.abspath(script)) if script else os.getcwd()
    return [folder]


def _start_embedded(kwargs, config, password):
    # Importing redis-py takes ~0.3 s; do it while the raylet starts up.
    import importlib
    import threading

    threading.Thread(target=importlib.import_module, args=("redis",), daemon=True).start()
    resources = _node_resources(kwargs)  # validate before starting anything
    session_dir = node_mod.new_session_dir(kwargs.get("temp_dir") or kwargs.get("_temp_dir"))
    procs = node_mod.NodeProcesses(session_dir, owned_by_driver=True,
                                   redirect_output=kwargs.get("redirect_output", True) is not False)
    node_ip = kwargs.get("node_ip_address") or "127.0.0.1"
    try:
        gcs_address = procs.start_redis(
            host=node_ip, port=None, password=password,
            max_memory=kwargs.get("redis_max_memory"),
            max_clients=kwargs.get("redis_max_clients"),
            wait=False,  # the raylet (started right away) waits for it
        )
        procs.shard_addresses = [
            procs.start_redis(host=node_ip, port=None, password=password,
                              max_memory=kwargs.get("redis_max_memory"),
                              name=f"redis-shard_{i}")
            for i in range(int(kwargs.get("num_redis_shards") or 0))
        ]
        store_bytes = kwargs.get("object_store_memory") or node_mod.default_object_store_memory(
            config
        )
        node_info = procs.start_raylet(
            node_id=node_mod.new_node_id(), node_ip=node_ip, gcs_address=gcs_address,
            redis_password=password, resources=resources, object_store_memory=int(store_bytes),
            config=config, plasma_directory=kwargs.get("plasma_directory"),
            huge_pages=bool(kwargs.get("huge_pages")), head=True,
            raylet_socket=kwargs.get("raylet_socket_name"),
            plasma_socket=kwargs.get("plasma_store_socket_name"),
            redirect_worker_output=kwargs.get("redirect_worker_output", True) is not False,
        )
    except BaseException:
        procs.kill_all()
        raise
    return procs, node_info, gcs_address


def _check_number(name, value, minimum=0):
    if value is None:
        return
    if not isinstance(value, int | float) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"ray.init({name}=...) must be a number >= {minimum}, got {value!r}")


def _node_resources(kwargs) -> dict:
    for name in ("num_cpus", "num_gpus", "num_workers"):
        _check_number(name, kwargs.get(name))
    _check_number("object_store_memory", kwargs.get("object_store_memory"), 16 * 1024**2)
    for name, value in (kwargs.get("resources") or {}).items():
        _check_number(f"resources[{name!r}]", value)
    num_cpus = kwargs.get("num_cpus")
    if num_cpus is None:
        num_cpus = kwargs.get("num_workers") or os.cpu_count() or 1
    resources = {"CPU": num_cpus}
    num_gpus = kwargs.get("num_gpus")
    if num_gpus is None:
        num_gpus = _detect_gpus()
    if num_gpus:
        resources["GPU"] = num_gpus
    custom = dict(kwargs.get("resources") or {})
    if kwargs.get("num_custom_resource"):
        custom.setdefault("CustomResource", kwargs["num_custom_resource"])
    for name in ("CPU", "GPU"):
        if name in custom:
            raise ValueError(f"Use num_{name.lower()}s=..., not resources={{{name!r}: ...}}")
    resources.update(custom)
    return resources


def _detect_gpus() -> int:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([d for d in visible.split(",") if d.strip()])
    try:
        return len([d for d in os.listdir("/proc/driver/nvidia/gpus")])
    except OSError:
        return 0


def _local_node_from_gcs(gcs, node_ip, gcs_address: str | None = None):
    """The node this driver attaches to: one whose raylet socket is on this machine.
    Several nodes may share a filesystem (network-namespace hosts, containers, a
    ``Cluster`` of nodes on 127.0.0.1, 127.0.0.2, ...): the one at ``node_ip`` if given,
    else the head when it runs here (its address is the GCS host's), else the one at the
    address this machine reaches the GCS from (as Ray picks its node IP), else at this
    machine's default-route address, else the first."""
    nodes = {k: v for k, v in gcs.hgetall_obj(keys.NODES).items() if v.get("alive", True)}
    if not nodes:
        raise RayConnectionError("The cluster has no live nodes; start one with `ray start`.")
    candidates = [n for n in nodes.values() if os.path.exists(n["raylet_socket"])]
    if not candidates:
        raise RayConnectionError(
            "No ray node is running on this machine: a driver connects through its local "
            "raylet. Run `ray start --address=<head address>` here first."
        )
    if node_ip:
        wanted = [node_ip]
    else:
        gcs_host = (gcs_address or "").rpartition(":")[0]
        wanted = [gcs_host, node_mod.get_node_ip_address(gcs_host)] if gcs_host else []
        wanted.append(node_mod.get_node_ip_address())
    for ip in wanted:
        matching = [n for n in candidates if n["node_ip"] == ip]
        if matching:
            return matching[0]
    return candidates[0]


def _subscribe_output(core):
    def on_logs(_channel, msg):
        name = msg.get("name") or ""
        prefix = f"({name + ' ' if name.startswith('ray::') else ''}pid={msg['pid']}, ip={msg['ip']})"
        for is_err, line in msg["lines"]:
            if not is_err and tqdm_ray.process_log_line(line):  # a task's progress bar: drawn
                continue
            stream = sys.stderr if is_err else sys.stdout
            try:
                tqdm_ray.safe_print(f"{prefix} {line}", file=stream, flush=True)
            except (OSError, ValueError):  # our stdout/stderr is closed: nowhere to print
                pass

    core.gcs.subscribe_obj(keys.channel_logs(core.job.hex), on_logs)


def _subscribe_errors(core):
    def on_error(_channel, msg):
        kind = msg.get("type")
        if kind == "task":
            text = f"(pid={msg.get('pid')}, ip={msg.get('ip')}) task {msg.get('name')} failed:\n"
            text += msg.get("message", "")
        else:
            text = msg.get("message", "")
        core.record_pushed_error(msg)
        try:
            print(text, file=sys.stderr, flush=True)
        except (OSError, ValueError):  # stderr is closed: ray.errors() still has it
            pass

    core.gcs.subscribe_obj(keys.channel_errors(core.job.hex), on_error)
