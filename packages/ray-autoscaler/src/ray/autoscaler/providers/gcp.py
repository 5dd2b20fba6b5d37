"""Compute Engine nodes through googleapiclient.

Nodes are instances in ``provider.project_id`` / ``provider.availability_zone``
labelled ``ray-cluster-name=<cluster>``. GCE label values allow only lowercase
letters, digits, ``-`` and ``_``, so tag values are stored with a reversible
escape (``_`` doubles, any other character becomes ``_xx`` in hex): ``up-to-date``
reads the same in the console, ``ray.worker.default`` becomes ``ray_2eworker_2edefault``.
"""

from __future__ import annotations

import copy
import re
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from ray.autoscaler.node_provider import NodeProvider, ProviderError, synchronized
from ray.autoscaler.tags import TAG_RAY_CLUSTER_NAME

_LIVE = ("PROVISIONING", "STAGING", "RUNNING")
_PLAIN = re.compile(r"[a-z0-9-]")


def encode_label(value: str) -> str:
    out = []
    for ch in value:
        if ch == "_":
            out.append("__")
        elif _PLAIN.fullmatch(ch):
            out.append(ch)
        else:
            out.append("".join(f"_{b:02x}" for b in ch.encode()))
    return "".join(out)


def decode_label(value: str) -> str:
    raw, i = bytearray(), 0
    while i < len(value):
        if value[i] == "_" and value[i + 1 : i + 2] == "_":
            raw += b"_"
            i += 2
        elif value[i] == "_":
            raw.append(int(value[i + 1 : i + 3], 16))
            i += 3
        else:
            raw += value[i].encode()
            i += 1
    return raw.decode()


def compute_api(provider_config: Mapping[str, Any]):
    from googleapiclient import discovery

    return discovery.build("compute", "v1", cache_discovery=False)


class GCPNodeProvider(NodeProvider):
    def __init__(
        self,
        provider_config: Mapping[str, Any],
        cluster_name: str,
        *,
        compute: Any = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        super().__init__(provider_config, cluster_name)
        self.project = provider_config["project_id"]
        self.zone = provider_config["availability_zone"]
        self.compute = compute if compute is not None else compute_api(provider_config)
        self._sleep = sleep
        self._cache: dict[str, dict[str, Any]] = {}

    # ---------------------------------------------------------------- queries
    @synchronized
    def non_terminated_nodes(self, tag_filters: Mapping[str, str]) -> list[str]:
        labels = {**tag_filters, TAG_RAY_CLUSTER_NAME: self.cluster_name}
        label_filter = " AND ".join(
            f'(labels.{k} = "{encode_label(v)}")' for k, v in sorted(labels.items())
        )
        status_filter = "(" + " OR ".join(f'(status = "{s}")' for s in _LIVE) + ")"
        found, token = [], None
        while True:
            reply = (
                self.compute.instances()
                .list(
                    project=self.project,
                    zone=self.zone,
                    filter=f"{label_filter} AND {status_filter}",
                    pageToken=token,
                )
                .execute()
            )
            for instance in reply.get("items", []):
                self._cache[instance["name"]] = instance
                found.append(instance["name"])
            token = reply.get("nextPageToken")
            if not token:
                return found

    def _instance(self, node_id: str, refresh: bool = True) -> dict[str, Any]:
        if refresh or node_id not in self._cache:
            self._cache[node_id] = (
                self.compute.instances()
                .get(project=self.project, zone=self.zone, instance=node_id)
                .execute()
            )
        return self._cache[node_id]

    @synchronized
    def is_running(self, node_id: str) -> bool:
        return self._instance(node_id)["status"] == "RUNNING"

    @synchronized
    def is_terminated(self, node_id: str) -> bool:
        return self._instance(node_id)["status"] not in _LIVE

    @synchronized
    def node_tags(self, node_id: str) -> dict[str, str]:
        labels = self._instance(node_id, refresh=False).get("labels", {})
        return {k: decode_label(v) for k, v in labels.items()}

    @synchronized
    def external_ip(self, node_id: str) -> str | None:
        for nic in self._instance(node_id, refresh=False).get("networkInterfaces", []):
            for access in nic.get("accessConfigs", []):
                if access.get("natIP"):
                    return access["natIP"]
        return None

    @synchronized
    def internal_ip(self, node_id: str) -> str | None:
        nics = self._instance(node_id, refresh=False).get("networkInterfaces", [])
        return nics[0].get("networkIP") if nics else None

    # ---------------------------------------------------------------- changes
    @synchronized
    def create_node(self, node_config: Mapping[str, Any], tags: Mapping[str, str], count: int):
        names = []
        for _ in range(count):
            body = copy.deepcopy(dict(node_config))
            name = f"ray-{self.cluster_name}-{uuid.uuid4().hex[:8]}".lower()
            body["name"] = name
            machine = body.get("machineType", "n1-standard-2")
            if "/" not in machine:
                body["machineType"] = f"zones/{self.zone}/machineTypes/{machine}"
            labels = {**tags, TAG_RAY_CLUSTER_NAME: self.cluster_name}
            body["labels"] = {
                **body.get("labels", {}),
                **{k: encode_label(v) for k, v in labels.items()},
            }
            operation = (
                self.compute.instances()
                .insert(project=self.project, zone=self.zone, body=body)
                .execute()
            )
            self._wait(operation)
            names.append(name)
        return names

    @synchronized
    def set_node_tags(self, node_id: str, tags: Mapping[str, str]) -> None:
        instance = self._instance(node_id)
        labels = {**instance.get("labels", {}), **{k: encode_label(v) for k, v in tags.items()}}
        body = {"labels": labels, "labelFingerprint": instance["labelFingerprint"]}
        operation = (
            self.compute.instances()
            .setLabels(project=self.project, zone=self.zone, instance=node_id, body=body)
            .execute()
        )
        self._wait(operation)
        instance["labels"] = labels

    @classmethod
    def bootstrap_config(cls, config: dict[str, Any]) -> dict[str, Any]:
        """Adds an SSH key to the project metadata (unless auth names one) and default NICs."""
        return _bootstrap(config, compute_api(config["provider"]), time.sleep)

    @synchronized
    def terminate_node(self, node_id: str) -> None:
        self.compute.instances().delete(
            project=self.project, zone=self.zone, instance=node_id
        ).execute()
        self._cache.pop(node_id, None)

    def _wait(self, operation: dict[str, Any], timeout_s: float = 300) -> None:
        deadline = time.monotonic() + timeout_s
        delay = 0.5
        while operation.get("status") != "DONE":
            if time.monotonic() > deadline:
                raise ProviderError(
                    f"GCE operation {operation['name']} still running after {timeout_s} s"
                )
            self._sleep(delay)
            delay = min(delay * 2, 5.0)
            operation = (
                self.compute.zoneOperations()
                .get(project=self.project, zone=self.zone, operation=operation["name"])
                .execute()
            )
        if "error" in operation:
            errors = operation["error"].get("errors", [])
            raise ProviderError(
                f"GCE operation {operation['name']} failed: "
                + "; ".join(e.get("message", str(e)) for e in errors)
            )


def _bootstrap(config: dict[str, Any], compute: Any, sleep: Callable[[float], None]) -> dict:
    config = copy.deepcopy(config)
    _configure_key_pair(config, compute, sleep)
    for node_config in _node_configs(config):
        # Instances need a NIC; default to the project's default network with a public IP.
        node_config.setdefault(
            "networkInterfaces",
            [
                {
                    "network": "global/networks/default",
                    "accessConfigs": [{"name": "External NAT", "type": "ONE_TO_ONE_NAT"}],
                }
            ],
        )
    return config


def _node_configs(config: dict[str, Any]):
    for key in ("head_node", "worker_nodes"):
        yield config.setdefault(key, {})
    for node_type in config.get("available_node_types", {}).values():
        yield node_type.setdefault("node_config", {})


def _configure_key_pair(config: dict[str, Any], compute: Any, sleep) -> None:
    """Create an SSH key and add it to the project's ``ssh-keys`` metadata (Ray 0.7's recipe)."""
    import os
    import subprocess

    auth = config.setdefault("auth", {})
    if auth.get("ssh_private_key"):
        return
    provider = config["provider"]
    user = auth.get("ssh_user", "ubuntu")
    project = compute.projects().get(project=provider["project_id"]).execute()
    metadata = project.get("commonInstanceMetadata", {})
    items = metadata.get("items", [])
    ssh_keys = next((i for i in items if i["key"] == "ssh-keys"), None)
    existing = ssh_keys["value"].split("\n") if ssh_keys else []
    name = f"ray-autoscaler_gcp_{provider['region']}_{provider['project_id']}_{user}"
    path = os.path.expanduser(f"~/.ssh/{name}.pem")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "rsa", "-b", "4096", "-N", "", "-C", user, "-f", path],
            check=True,
            timeout=120,
        )
        os.replace(path + ".pub", path[: -len(".pem")] + ".pub")
    with open(path[: -len(".pem")] + ".pub") as f:
        public = f.read().strip()
    entry = f"{user}:{public}"
    if entry not in existing:
        value = "\n".join([*existing, entry]) if existing else entry
        if ssh_keys is None:
            items.append({"key": "ssh-keys", "value": value})
        else:
            ssh_keys["value"] = value
        operation = (
            compute.projects()
            .setCommonInstanceMetadata(
                project=provider["project_id"],
                body={"fingerprint": metadata.get("fingerprint"), "items": items},
            )
            .execute()
        )
        _wait_global(compute, provider["project_id"], operation, sleep)
    auth["ssh_private_key"] = path


def _wait_global(compute, project: str, operation: dict, sleep, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while operation.get("status") != "DONE":
        if time.monotonic() > deadline:
            raise ProviderError(
                f"GCE operation {operation['name']} still running after {timeout_s} s"
            )
        sleep(1.0)
        operation = (
            compute.globalOperations().get(project=project, operation=operation["name"]).execute()
        )
    if "error" in operation:
        raise ProviderError(f"GCE operation {operation['name']} failed: {operation['error']}")
