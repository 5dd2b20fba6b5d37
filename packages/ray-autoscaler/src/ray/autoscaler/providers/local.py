"""The private-cluster provider: a fixed list of machines reached over SSH.

"Launching" a node claims one of ``provider.worker_ips`` (or ``head_ip``) and tags
it; "terminating" releases it. The machines keep running, so ``ray down`` stops
Ray on them over SSH (``nodes_outlive_termination``). Tags live in a JSON state
file (``provider.state_path``, default ``/tmp/cluster-<name>.state``), updated
under an exclusive ``flock`` so ``ray up`` and the head's monitor can share it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator, Mapping
from typing import Any

from ray.autoscaler.node_provider import NodeProvider, ProviderError
from ray.autoscaler.tags import NODE_KIND_HEAD, TAG_RAY_CLUSTER_NAME, TAG_RAY_NODE_KIND

_RUNNING, _TERMINATED = "running", "terminated"


class LocalNodeProvider(NodeProvider):
    nodes_outlive_termination = True

    def __init__(self, provider_config: Mapping[str, Any], cluster_name: str):
        super().__init__(provider_config, cluster_name)
        self.head_ip = provider_config["head_ip"]
        self.worker_ips = list(provider_config["worker_ips"])
        self.state_path = os.path.expanduser(
            provider_config.get("state_path") or f"/tmp/cluster-{cluster_name}.state"
        )

    @contextlib.contextmanager
    def _state(self, write: bool = False) -> Iterator[dict[str, dict[str, Any]]]:
        os.makedirs(os.path.dirname(self.state_path) or ".", exist_ok=True)
        with open(self.state_path, "a+") as f:
            fcntl.flock(f, fcntl.LOCK_EX if write else fcntl.LOCK_SH)
            try:
                f.seek(0)
                text = f.read()
                state = json.loads(text) if text.strip() else {}
                # Machines listed in the config but not yet in the file are free.
                for ip in [self.head_ip, *self.worker_ips]:
                    state.setdefault(ip, {"state": _TERMINATED, "tags": {}})
                yield state
                if write:
                    f.seek(0)
                    f.truncate()
                    json.dump(state, f, indent=1, sort_keys=True)
                    f.flush()
                    os.fsync(f.fileno())
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def non_terminated_nodes(self, tag_filters: Mapping[str, str]) -> list[str]:
        with self._state() as state:
            return [
                ip
                for ip, node in state.items()
                if node["state"] == _RUNNING
                and all(node["tags"].get(k) == v for k, v in tag_filters.items())
            ]

    def is_running(self, node_id: str) -> bool:
        with self._state() as state:
            return state.get(node_id, {}).get("state") == _RUNNING

    def is_terminated(self, node_id: str) -> bool:
        return not self.is_running(node_id)

    def node_tags(self, node_id: str) -> dict[str, str]:
        with self._state() as state:
            return dict(state[node_id]["tags"])

    def external_ip(self, node_id: str) -> str:
        return node_id

    def internal_ip(self, node_id: str) -> str:
        return node_id

    def create_node(self, node_config: Mapping[str, Any], tags: Mapping[str, str], count: int):
        want_head = tags.get(TAG_RAY_NODE_KIND) == NODE_KIND_HEAD
        candidates = [self.head_ip] if want_head else self.worker_ips
        with self._state(write=True) as state:
            free = [ip for ip in candidates if state[ip]["state"] == _TERMINATED]
            if len(free) < count:
                raise ProviderError(
                    f"local provider: asked for {count} {'head' if want_head else 'worker'} "
                    f"node(s) but only {len(free)} of {candidates} are free: list more "
                    "provider.worker_ips or lower max_workers"
                )
            for ip in free[:count]:
                state[ip] = {
                    "state": _RUNNING,
                    "tags": {**tags, TAG_RAY_CLUSTER_NAME: self.cluster_name},
                }

    def set_node_tags(self, node_id: str, tags: Mapping[str, str]) -> None:
        with self._state(write=True) as state:
            state[node_id]["tags"].update(tags)

    def terminate_node(self, node_id: str) -> None:
        with self._state(write=True) as state:
            state[node_id] = {"state": _TERMINATED, "tags": {}}
