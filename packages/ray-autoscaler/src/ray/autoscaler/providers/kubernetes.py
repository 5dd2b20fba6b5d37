"""Pods as nodes, through the official kubernetes client.

Each node is a pod in ``provider.namespace`` (default ``ray``) created from the
node config (a pod manifest), labelled with the autoscaler's tags. Commands run
with ``kubectl exec``. The API client is configured from ``provider.api_server``
(tests, proxies), else in-cluster service-account config, else ``~/.kube/config``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import kubernetes
from kubernetes.client.rest import ApiException

from ray.autoscaler.command_runner import CommandRunner, KubectlCommandRunner
from ray.autoscaler.node_provider import NodeProvider, ProviderError
from ray.autoscaler.tags import TAG_RAY_CLUSTER_NAME

_DONE_PHASES = ("Succeeded", "Failed")


def core_api(provider_config: Mapping[str, Any]) -> kubernetes.client.CoreV1Api:
    if provider_config.get("api_server"):
        configuration = kubernetes.client.Configuration()
        configuration.host = provider_config["api_server"]
        return kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(configuration))
    try:
        kubernetes.config.load_incluster_config()
    except kubernetes.config.ConfigException:
        kubernetes.config.load_kube_config()
    return kubernetes.client.CoreV1Api()


class KubernetesNodeProvider(NodeProvider):
    def __init__(self, provider_config: Mapping[str, Any], cluster_name: str):
        super().__init__(provider_config, cluster_name)
        self.namespace = provider_config.get("namespace", "ray")
        self.core = core_api(provider_config)

    def non_terminated_nodes(self, tag_filters: Mapping[str, str]) -> list[str]:
        selector = {**tag_filters, TAG_RAY_CLUSTER_NAME: self.cluster_name}
        pods = self.core.list_namespaced_pod(
            self.namespace, label_selector=",".join(f"{k}={v}" for k, v in sorted(selector.items()))
        )
        return [
            p.metadata.name
            for p in pods.items
            if p.status.phase not in _DONE_PHASES and p.metadata.deletion_timestamp is None
        ]

    def _pod(self, node_id: str):
        return self.core.read_namespaced_pod(node_id, self.namespace)

    def is_running(self, node_id: str) -> bool:
        return self._pod(node_id).status.phase == "Running"

    def is_terminated(self, node_id: str) -> bool:
        try:
            pod = self._pod(node_id)
        except ApiException as e:
            if e.status == 404:
                return True
            raise
        return pod.status.phase in _DONE_PHASES or pod.metadata.deletion_timestamp is not None

    def node_tags(self, node_id: str) -> dict[str, str]:
        return dict(self._pod(node_id).metadata.labels or {})

    def external_ip(self, node_id: str) -> str | None:
        return self._pod(node_id).status.pod_ip

    def internal_ip(self, node_id: str) -> str | None:
        return self._pod(node_id).status.pod_ip

    def create_node(self, node_config: Mapping[str, Any], tags: Mapping[str, str], count: int):
        created = []
        for _ in range(count):
            body = copy.deepcopy(dict(node_config))
            body.setdefault("apiVersion", "v1")
            body.setdefault("kind", "Pod")
            meta = body.setdefault("metadata", {})
            meta.setdefault("generateName", f"ray-{self.cluster_name}-")
            meta["labels"] = {**meta.get("labels", {}), **tags}
            meta["labels"][TAG_RAY_CLUSTER_NAME] = self.cluster_name
            try:
                pod = self.core.create_namespaced_pod(self.namespace, body)
            except ApiException as e:
                raise ProviderError(f"the API server refused the pod: {e.status} {e.reason}")
            created.append(pod.metadata.name)
        return created

    def set_node_tags(self, node_id: str, tags: Mapping[str, str]) -> None:
        self.core.patch_namespaced_pod(
            node_id, self.namespace, {"metadata": {"labels": dict(tags)}}
        )

    def terminate_node(self, node_id: str) -> None:
        try:
            self.core.delete_namespaced_pod(node_id, self.namespace)
        except ApiException as e:
            if e.status != 404:
                raise

    def get_command_runner(
        self, node_id, auth_config, *, use_internal_ip=False, process_runner=None
    ) -> CommandRunner:
        return KubectlCommandRunner(
            node_id=node_id, namespace=self.namespace, process_runner=process_runner
        )

    def cleanup(self) -> None:
        self.core.api_client.close()
