"""``Cluster``: several ray nodes on this machine, for tests (0.7 ``ray.cluster_utils``).

    cluster = Cluster()
    cluster.add_node(num_cpus=2)                    # the first node is the head
    cluster.add_node(num_cpus=1, resources={"x": 1})
    ray.init(address=cluster.address)
    ...
    cluster.remove_node(node)                       # kills that node's raylet and workers
    cluster.shutdown()

Every node is a real raylet process with its own object store and workers; they
share one session directory and reach each other over TCP on 127.0.0.1.
"""

from __future__ import annotations

import os
import time

from ray._private import node as node_mod
from ray._private.config import build_config
from ray._private.gcs import connect, keys


class ClusterNode:
    def __init__(self, procs: node_mod.NodeProcesses, info: dict, head: bool):
        self.procs = procs
        self.info = info
        self.head = head

    @property
    def node_id(self) -> str:
        return self.info["node_id"]

    @property
    def unique_id(self) -> str:
        return self.node_id

    @property
    def raylet_socket_name(self) -> str:
        return self.info["raylet_socket"]

    @property
    def plasma_store_socket_name(self) -> str:
        return self.info["plasma_socket"]

    @property
    def node_ip_address(self) -> str:
        return self.info["node_ip"]

    def kill_raylet(self) -> None:
        self.procs.kill_all(timeout_s=1.0)

    def all_processes_alive(self) -> bool:
        return all(p.poll() is None for _, p in self.procs.procs)


class Cluster:
    def __init__(self, initialize_head: bool = False, connect: bool = False,
                 head_node_args: dict | None = None, shutdown_at_exit: bool = True,
                 _internal_config: str | None = None):
        self.session_dir = node_mod.new_session_dir(None)
        self.config = build_config(_internal_config)
        self.head_node: ClusterNode | None = None
        self.worker_nodes: list[ClusterNode] = []
        self.redis_password = None
        self._redis = None
        self._redis_persist_dir: str | None = None
        self.address: str | None = None
        self.redis_address: str | None = None
        if initialize_head:
            self.add_node(**(head_node_args or {}))
            if connect:
                import ray

                ray.init(address=self.address, redis_password=self.redis_password)

    def add_node(self, wait: bool = True, **kwargs) -> ClusterNode:
        """Start a node: num_cpus, num_gpus, resources, object_store_memory, ..."""
        known = {"num_cpus", "num_gpus", "resources", "object_store_memory", "redis_password",
                 "_internal_config", "node_ip_address", "redis_port", "plasma_directory",
                 "huge_pages", "redis_persist"}
        unknown = set(kwargs) - known
        if unknown:
            raise TypeError(f"Cluster.add_node got unknown arguments {sorted(unknown)}")
        node_ip = kwargs.get("node_ip_address") or "127.0.0.1"
        if self.head_node is None:
            from ray._private import auth

            self.redis_password = kwargs.get("redis_password") or auth.new_secret()
            self._redis = node_mod.NodeProcesses(self.session_dir, owned_by_driver=True)
            self._redis_persist_dir = (os.path.join(self.session_dir, "redis")
                                       if kwargs.get("redis_persist") else None)
            self.address = self._redis.start_redis(
                host=node_ip, port=kwargs.get("redis_port"), password=self.redis_password,
                persist_dir=self._redis_persist_dir,
            )
            self.redis_address = self.address
            auth.save_secret(self.address, self.redis_password)  # ray.init(address=...) finds it
        resources = {"CPU": kwargs.get("num_cpus", 1)}
        if kwargs.get("num_gpus"):
            resources["GPU"] = kwargs["num_gpus"]
        resources.update(kwargs.get("resources") or {})
        resources = {k: v for k, v in resources.items() if v}
        config = build_config(kwargs.get("_internal_config")) if kwargs.get(
            "_internal_config") else self.config
        procs = node_mod.NodeProcesses(self.session_dir, owned_by_driver=True)
        info = procs.start_raylet(
            node_id=node_mod.new_node_id(), node_ip=node_ip, gcs_address=self.address,
            redis_password=self.redis_password, resources=resources,
            object_store_memory=int(kwargs.get("object_store_memory") or 150 * 1024**2),
            config=config, plasma_directory=kwargs.get("plasma_directory"),
            huge_pages=bool(kwargs.get("huge_pages")), head=self.head_node is None,
        )
        node = ClusterNode(procs, info, head=self.head_node is None)
        if self.head_node is None:
            self.head_node = node
        else:
            self.worker_nodes.append(node)
        if wait:
            self.wait_for_nodes()
        return node

    def remove_node(self, node: ClusterNode, allow_graceful: bool = True) -> None:
        """Stop a node's raylet (and with it its workers and object store)."""
        if allow_graceful:
            node.procs.kill_all(timeout_s=2.0)
        else:
            for _, proc in node.procs.procs:
                proc.kill()
                proc.wait()
            node.procs.procs.clear()
        if node is self.head_node:
            self.head_node = None
        elif node in self.worker_nodes:
            self.worker_nodes.remove(node)

    def restart_redis(self, down_s: float = 0.0) -> None:
        """Kill the GCS's Redis (SIGKILL), wait ``down_s``, start it again on the same
        port. With ``add_node(redis_persist=True)`` on the head it reloads its
        append-only file; without, it comes back empty."""
        name, proc = next((n, p) for n, p in self._redis.procs if n == "redis")
        proc.kill()
        proc.wait()
        self._redis.procs.remove((name, proc))
        time.sleep(down_s)
        host, _, port = self.address.rpartition(":")
        self._redis.start_redis(host=host, port=int(port), password=self.redis_password,
                                persist_dir=self._redis_persist_dir)

    def list_all_nodes(self) -> list[ClusterNode]:
        return ([self.head_node] if self.head_node else []) + list(self.worker_nodes)

    def wait_for_nodes(self, timeout: float = 30.0) -> None:
        """Block until the GCS lists every started node as alive."""
        expected = {n.node_id for n in self.list_all_nodes()}
        gcs = connect(self.address, self.redis_password)
        try:
            deadline = time.monotonic() + timeout
            while True:
                nodes = gcs.hgetall_obj(keys.NODES)
                alive = {k for k, v in nodes.items() if v.get("alive", True)}
                if expected <= alive:
                    return
                if time.monotonic() > deadline:
                    raise TimeoutError(f"nodes {expected - alive} did not register in {timeout} s")
                time.sleep(0.05)
        finally:
            gcs.close()

    def shutdown(self) -> None:
        import ray

        if ray.is_initialized():
            ray.shutdown()
        for node in reversed(self.list_all_nodes()):
            self.remove_node(node)
        if self._redis is not None:
            self._redis.kill_all()
            self._redis = None
            from ray._private import auth

            auth.forget_secret(self.address)
