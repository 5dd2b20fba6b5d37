"""An in-process node provider: nodes are records in a dict, commands run locally.

Each node gets a directory under ``provider.root_dir`` (default: a temp dir per
cluster) and a :class:`LocalCommandRunner`, so the updater really runs its setup
commands and copies its file mounts. State is shared by every provider instance
of the same cluster name in this process, the way a cloud is shared by ``ray up``
and a later ``ray down``. Use it as ``provider: {type: external, module:
ray.autoscaler.providers.memory.InMemoryNodeProvider}``.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import threading
from collections.abc import Mapping
from typing import Any

from ray.autoscaler.command_runner import CommandRunner, LocalCommandRunner
from ray.autoscaler.node_provider import NodeProvider
from ray.autoscaler.tags import TAG_RAY_CLUSTER_NAME

_LOCK = threading.Lock()
_CLUSTERS: dict[str, dict[str, dict[str, Any]]] = {}
_IDS = itertools.count(1)


class InMemoryNodeProvider(NodeProvider):
    def __init__(self, provider_config: Mapping[str, Any], cluster_name: str):
        super().__init__(provider_config, cluster_name)
        self.root_dir = provider_config.get("root_dir") or os.path.join(
            tempfile.gettempdir(), f"ray-memory-cluster-{cluster_name}"
        )
        # Nodes stay "pending" for this many is_running() calls, like a booting VM.
        self.boot_polls = int(provider_config.get("boot_polls", 0))
        with _LOCK:
            self._nodes = _CLUSTERS.setdefault(cluster_name, {})

    @classmethod
    def reset(cls, cluster_name: str | None = None) -> None:
        """Forget every node (of one cluster, or all); test helper."""
        with _LOCK:
            for name in [cluster_name] if cluster_name else list(_CLUSTERS):
                _CLUSTERS.pop(name, None)

    def non_terminated_nodes(self, tag_filters: Mapping[str, str]) -> list[str]:
        with _LOCK:
            return [
                node_id
                for node_id, node in self._nodes.items()
                if node["state"] != "terminated"
                and all(node["tags"].get(k) == v for k, v in tag_filters.items())
            ]

    def is_running(self, node_id: str) -> bool:
        with _LOCK:
            node = self._nodes[node_id]
            if node["state"] == "pending":
                node["polls"] += 1
                if node["polls"] > self.boot_polls:
                    node["state"] = "running"
            return node["state"] == "running"

    def is_terminated(self, node_id: str) -> bool:
        with _LOCK:
            return self._nodes.get(node_id, {"state": "terminated"})["state"] == "terminated"

    def node_tags(self, node_id: str) -> dict[str, str]:
        with _LOCK:
            return dict(self._nodes[node_id]["tags"])

    def external_ip(self, node_id: str) -> str | None:
        return self._nodes[node_id]["ip"]

    def internal_ip(self, node_id: str) -> str | None:
        return self._nodes[node_id]["ip"]

    def create_node(self, node_config: Mapping[str, Any], tags: Mapping[str, str], count: int):
        with _LOCK:
            for _ in range(count):
                n = next(_IDS)
                node_id = f"mem-{n}"
                self._nodes[node_id] = {
                    "state": "pending",
                    "polls": 0,
                    "tags": {**tags, TAG_RAY_CLUSTER_NAME: self.cluster_name},
                    "node_config": dict(node_config),
                    "ip": f"127.0.{n // 250}.{n % 250 + 1}",
                }

    def set_node_tags(self, node_id: str, tags: Mapping[str, str]) -> None:
        with _LOCK:
            self._nodes[node_id]["tags"].update(tags)

    def terminate_node(self, node_id: str) -> None:
        with _LOCK:
            self._nodes[node_id]["state"] = "terminated"
        shutil.rmtree(os.path.join(self.root_dir, node_id), ignore_errors=True)

    def node_config(self, node_id: str) -> dict[str, Any]:
        return dict(self._nodes[node_id]["node_config"])

    def get_command_runner(
        self, node_id, auth_config, *, use_internal_ip=False, process_runner=None
    ) -> CommandRunner:
        return LocalCommandRunner(
            node_id=node_id,
            root=os.path.join(self.root_dir, node_id),
            process_runner=process_runner,
        )
