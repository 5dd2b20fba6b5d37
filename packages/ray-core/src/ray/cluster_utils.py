"""``Cluster``: several ray nodes on this machine, for tests (``ray.cluster_utils``).

    cluster = Cluster()
    cluster.add_node(num_cpus=2)                    # the first node is the head
    cluster.add_node(num_cpus=1, resources={"x": 1})
    cluster.connect(namespace="tests")              # or ray.init(address=cluster.address)
    ...
    cluster.remove_node(node)                       # stops that node's raylet and workers
    cluster.shutdown()

Every node is a real raylet process with its own object store and workers; they
share one session directory and reach each other over TCP on 127.0.0.1.
``add_node`` takes the node arguments of Ray 0.7 and 2.x (see :class:`NodeArgs`).
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

from ray._private import node as node_mod
from ray._private.config import build_config
from ray._private.gcs import connect as gcs_connect
from ray._private.gcs import keys
from ray._private.suggest import unknown_keyword_error

# Windows has no fork-based cluster here; Ray's tests read this flag.
cluster_not_supported = os.name == "nt"

DEFAULT_OBJECT_STORE_MEMORY = 150 * 1024**2  # as Ray's Cluster: 150 MiB per node


@dataclasses.dataclass(frozen=True)
class NodeArgs:
    """The arguments of ``Cluster.add_node``, in Ray 0.7's and 2.x's spellings.

    ``redis_*`` and ``redis_persist`` apply to the head only (it starts the GCS);
    ``include_webui``/``include_dashboard`` may only be False (a Cluster starts no
    dashboard: use ``ray start --head --include-dashboard`` for one).
    """

    num_cpus: float = 1
    num_gpus: float = 0
    resources: dict = dataclasses.field(default_factory=dict)
    object_store_memory: int = DEFAULT_OBJECT_STORE_MEMORY
    node_ip_address: str = "127.0.0.1"
    node_manager_port: int = 0
    object_manager_port: int = 0
    plasma_directory: str | None = None
    huge_pages: bool = False
    redirect_worker_output: bool = True
    internal_config: Any = None
    # head only
    redis_password: str | None = None
    redis_port: int | None = None
    redis_max_memory: int | None = None
    redis_max_clients: int | None = None
    redis_persist: bool = False

    _ALIASES = {"_internal_config": "internal_config", "_system_config": "internal_config",
                "_redis_password": "redis_password", "redirect_output": "redirect_worker_output",
                "_node_ip_address": "node_ip_address", "_plasma_directory": "plasma_directory"}
    # Accepted for compatibility where the value changes nothing here: ``cleanup`` and
    # ``shutdown_at_exit`` (nodes always stop with the cluster), port ranges (workers
    # listen on ports the OS picks), ``num_redis_shards=1``/``0`` (one GCS store).
    _NO_EFFECT = {"cleanup", "shutdown_at_exit", "min_worker_port", "max_worker_port",
                  "worker_port_list", "dashboard_agent_listen_port", "include_log_monitor"}

    @classmethod
    def parse(cls, kwargs: dict) -> NodeArgs:
        fields = {f.name for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {}
        for key, value in kwargs.items():
            name = cls._ALIASES.get(key, key)
            if key in ("include_webui", "include_dashboard"):
                if value:
                    raise ValueError(
                        f"Cluster.add_node({key}=True): a test Cluster starts no dashboard; "
                        "start one with `ray start --head --include-dashboard true`."
                    )
                continue
            if key == "num_redis_shards":
                if value not in (None, 0, 1):
                    raise ValueError(
                        f"Cluster.add_node(num_redis_shards={value}): the GCS is one Redis "
                        "server here; omit num_redis_shards."
                    )
                continue
            if key in cls._NO_EFFECT:
                continue
            if name not in fields:
                raise unknown_keyword_error("Cluster.add_node()", key,
                                            fields | set(cls._ALIASES) | cls._NO_EFFECT)
            values[name] = value
        if values.get("object_store_memory") is None:
            values.pop("object_store_memory", None)
        args = cls(**values)
        args._validate()
        return args

    def _validate(self) -> None:
        for name in ("num_cpus", "num_gpus"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise ValueError(f"Cluster.add_node({name}={value!r}): must be a number >= 0")
        if not isinstance(self.resources, dict):
            raise TypeError(f"Cluster.add_node(resources=...) must be a dict, got "
                            f"{type(self.resources).__name__}")
        for reserved in ("CPU", "GPU"):
            if reserved in self.resources:
                raise ValueError(f"Cluster.add_node(resources={{'{reserved}': ...}}): use "
                                 f"num_{reserved.lower()}s= instead")
        if self.object_store_memory <= 0:
            raise ValueError("Cluster.add_node(object_store_memory=...) must be > 0 bytes")

    def node_resources(self) -> dict:
        resources = {"CPU": self.num_cpus, "GPU": self.num_gpus, **self.resources}
        return {k: v for k, v in resources.items() if v}


class ClusterNode:
    """One node of a :class:`Cluster`: its raylet process and what it answered."""

    def __init__(self, procs: node_mod.NodeProcesses, info: dict, head: bool,
                 gcs_address: str):
        self.procs = procs
        self.info = info
        self.head = head
        self.gcs_address = gcs_address

    @property
    def node_id(self) -> str:
        return self.info["node_id"]

    @property
    def unique_id(self) -> str:
        return self.node_id

    @property
    def address(self) -> str:
        """The cluster's address (what ``ray.init(address=)`` takes)."""
        return self.gcs_address

    @property
    def redis_address(self) -> str:
        return self.gcs_address

    @property
    def raylet_socket_name(self) -> str:
        return self.info["raylet_socket"]

    @property
    def plasma_store_socket_name(self) -> str:
        return self.info["plasma_socket"]

    @property
    def node_ip_address(self) -> str:
        return self.info["node_ip"]

    @property
    def node_manager_port(self) -> int:
        return self.info["raylet_port"]

    @property
    def raylet_pid(self) -> int:
        return self.info["pid"]

    def kill_raylet(self) -> None:
        """Stop this node's raylet at once (SIGKILL); its workers exit with it."""
        self.kill_all_processes(allow_graceful=False)

    def kill_all_processes(self, check_alive: bool = False, allow_graceful: bool = True,
                           wait: bool = True) -> None:
        """Stop the node's processes (SIGTERM first when ``allow_graceful``).

        ``check_alive`` raises if one had already exited; ``wait`` is always honoured
        (the processes are reaped before this returns).
        """
        if check_alive and not self.all_processes_alive():
            dead = [name for name, p in self.procs.procs if p.poll() is not None]
            raise RuntimeError(f"processes {dead} of node {self.node_id[:8]} had already "
                               "exited")
        if allow_graceful:
            self.procs.kill_all(timeout_s=2.0)
            return
        for _, proc in self.procs.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        self.procs.procs.clear()

    def all_processes_alive(self) -> bool:
        """Whether every process this node still tracks is running."""
        return all(p.poll() is None for _, p in self.procs.procs)

    def remaining_processes_alive(self) -> bool:
        """Like :meth:`all_processes_alive`; processes stopped on purpose
        (``kill_raylet``) are no longer tracked and do not count."""
        return self.all_processes_alive()

    def any_processes_alive(self) -> bool:
        return any(p.poll() is None for _, p in self.procs.procs)

    def __repr__(self):
        role = "head" if self.head else "worker"
        return f"ClusterNode({role}, node_id={self.node_id[:8]}, ip={self.node_ip_address})"


class Cluster:
    """Nodes started one by one on this machine, sharing one GCS.

    Args:
        initialize_head: start the head node now (with ``head_node_args``).
        connect: also ``ray.init`` this process against it (needs ``initialize_head``).
        head_node_args: :class:`NodeArgs` of the head node.
        shutdown_at_exit: nodes always stop when the creating process exits (they are
            tied to it), so only True is meaningful; False raises.
    """

    def __init__(self, initialize_head: bool = False, connect: bool = False,
                 head_node_args: dict | None = None, shutdown_at_exit: bool = True,
                 _internal_config: str | dict | None = None):
        if not shutdown_at_exit:
            raise ValueError(
                "Cluster(shutdown_at_exit=False): a test Cluster's nodes stop when the "
                "process that started them exits; use `ray start` for nodes that outlive it."
            )
        if connect and not initialize_head:
            raise RuntimeError("Cannot connect to uninitialized cluster.")
        self.session_dir = node_mod.new_session_dir(None)
        self.config = build_config(_internal_config)
        self.head_node: ClusterNode | None = None
        self.worker_nodes: list[ClusterNode] = []
        self.redis_password: str | None = None
        self.connected = False
        self.webui_url: str | None = None
        self._redis: node_mod.NodeProcesses | None = None
        self._redis_persist_dir: str | None = None
        self._gcs_address: str | None = None
        if initialize_head:
            self.add_node(**(head_node_args or {}))
            if connect:
                self.connect()

    # -- addresses -----------------------------------------------------------------------
    @property
    def address(self) -> str | None:
        """The GCS address (``host:port``) drivers pass to ``ray.init(address=)``."""
        return self._gcs_address

    @property
    def gcs_address(self) -> str | None:
        return self._gcs_address

    @property
    def redis_address(self) -> str | None:  # the 0.7 name
        return self._gcs_address

    def connect(self, namespace: str | None = None, **init_kwargs):
        """``ray.init`` this process against the cluster (in ``namespace``)."""
        import ray

        if self.address is None:
            raise RuntimeError("Cannot connect to uninitialized cluster: add a node first.")
        if namespace is not None:
            init_kwargs["namespace"] = namespace
        init_kwargs.setdefault("ignore_reinit_error", True)
        info = ray.init(address=self.address, redis_password=self.redis_password,
                        **init_kwargs)
        self.connected = True
        return info

    # -- nodes ---------------------------------------------------------------------------
    def add_node(self, wait: bool = True, **node_args) -> ClusterNode:
        """Start a node (the first one is the head) and return it.

        ``wait`` blocks until the GCS lists the node as alive.
        """
        args = NodeArgs.parse(node_args)
        is_head = self.head_node is None
        if is_head:
            self._start_gcs(args)
        elif args.redis_port or args.redis_max_memory or args.redis_persist:
            raise ValueError("Cluster.add_node: redis_port, redis_max_memory and "
                             "redis_persist configure the GCS, which the head node starts; "
                             "pass them to the first add_node call")
        config = build_config(args.internal_config) if args.internal_config else self.config
        procs = node_mod.NodeProcesses(self.session_dir, owned_by_driver=True)
        info = procs.start_raylet(
            node_id=node_mod.new_node_id(), node_ip=args.node_ip_address,
            gcs_address=self._gcs_address, redis_password=self.redis_password,
            resources=args.node_resources(), object_store_memory=int(args.object_store_memory),
            config=config, plasma_directory=args.plasma_directory, huge_pages=args.huge_pages,
            node_manager_port=args.node_manager_port,
            object_manager_port=args.object_manager_port,
            redirect_worker_output=args.redirect_worker_output, head=is_head,
        )
        node = ClusterNode(procs, info, head=is_head, gcs_address=self._gcs_address)
        if is_head:
            self.head_node = node
        else:
            self.worker_nodes.append(node)
        if wait:
            self._wait_for_node(node)
        return node

    def _start_gcs(self, args: NodeArgs) -> None:
        from ray._private import auth

        self.redis_password = args.redis_password or auth.new_secret()
        self._redis = node_mod.NodeProcesses(self.session_dir, owned_by_driver=True)
        self._redis_persist_dir = (os.path.join(self.session_dir, "redis")
                                   if args.redis_persist else None)
        self._gcs_address = self._redis.start_redis(
            host=args.node_ip_address, port=args.redis_port, password=self.redis_password,
            max_memory=args.redis_max_memory, max_clients=args.redis_max_clients,
            persist_dir=self._redis_persist_dir,
        )
        auth.save_secret(self._gcs_address, self.redis_password)  # ray.init(address=) finds it

    def remove_node(self, node: ClusterNode, allow_graceful: bool = True) -> None:
        """Stop a node's raylet (and with it its workers and object store).

        With ``allow_graceful`` the raylet is asked to stop (it tells the GCS it is
        gone); without, it is killed and the GCS notices by missed heartbeats.
        """
        if node is not self.head_node and node not in self.worker_nodes:
            raise ValueError(f"{node!r} is not a node of this cluster")
        node.kill_all_processes(allow_graceful=allow_graceful)
        if node is self.head_node:
            self.head_node = None
        else:
            self.worker_nodes.remove(node)

    def list_all_nodes(self) -> list[ClusterNode]:
        """The head (if running) and then the worker nodes, in the order added."""
        return ([self.head_node] if self.head_node else []) + list(self.worker_nodes)

    def remaining_processes_alive(self) -> bool:
        """Whether every process of every node is still running (processes stopped
        on purpose, e.g. with ``node.kill_raylet()``, do not count)."""
        gcs_alive = self._redis is None or all(p.poll() is None for _, p in self._redis.procs)
        return gcs_alive and all(n.remaining_processes_alive() for n in self.list_all_nodes())

    def _wait_for_node(self, node: ClusterNode, timeout: float = 30.0) -> None:
        self._wait_until(lambda alive: node.node_id in alive, timeout,
                         lambda alive: f"node {node.node_id[:8]} did not register")

    def wait_for_nodes(self, timeout: float = 30.0) -> None:
        """Block until the GCS lists exactly this cluster's current nodes as alive
        (started ones registered, removed ones gone)."""
        expected = {n.node_id for n in self.list_all_nodes()}
        self._wait_until(lambda alive: alive == expected, timeout,
                         lambda alive: f"the GCS lists {len(alive)} live nodes, expected "
                                       f"{len(expected)} (missing {sorted(expected - alive)}, "
                                       f"extra {sorted(alive - expected)})")

    def _wait_until(self, done, timeout: float, describe) -> None:
        gcs = gcs_connect(self._gcs_address, self.redis_password)
        try:
            deadline = time.monotonic() + timeout
            while True:
                nodes = gcs.hgetall_obj(keys.NODES)
                alive = {k for k, v in nodes.items() if v.get("alive", True)}
                if done(alive):
                    return
                if time.monotonic() > deadline:
                    raise TimeoutError(f"Timed out after {timeout} s while waiting for "
                                       f"nodes: {describe(alive)}")
                time.sleep(0.05)
        finally:
            gcs.close()

    def restart_redis(self, down_s: float = 0.0) -> None:
        """Kill the GCS's Redis (SIGKILL), wait ``down_s``, start it again on the same
        port. With ``add_node(redis_persist=True)`` on the head it reloads its
        append-only file; without, it comes back empty."""
        name, proc = next((n, p) for n, p in self._redis.procs if n == "redis")
        proc.kill()
        proc.wait()
        self._redis.procs.remove((name, proc))
        time.sleep(down_s)
        host, _, port = self._gcs_address.rpartition(":")
        self._redis.start_redis(host=host, port=int(port), password=self.redis_password,
                                persist_dir=self._redis_persist_dir)

    def shutdown(self) -> None:
        """Disconnect this process (if connected) and stop every node and the GCS."""
        import ray

        if ray.is_initialized():
            ray.shutdown()
        self.connected = False
        nodes = list(reversed(self.list_all_nodes()))
        for node in nodes:  # all at once: 100 nodes stop in seconds, not minutes
            node.procs.terminate()
        for node in nodes:
            self.remove_node(node)
        if self._redis is not None:
            self._redis.kill_all()
            self._redis = None
            from ray._private import auth

            auth.forget_secret(self._gcs_address)


__all__ = ["Cluster", "ClusterNode", "NodeArgs", "cluster_not_supported"]
