"""The ``NodeProvider`` interface and the registry behind ``provider.type``.

A provider launches, tags, lists and terminates machines; it knows nothing about
Ray. Tags are the only state: every query goes back to the cloud (or the state
file, or the API server), so ``ray up`` on a laptop and the monitor on the head
agree. Implementations:

    local       a private cluster of listed IPs (state in a file, machines persist)
    aws         EC2 through boto3
    gcp         Compute Engine through googleapiclient
    kubernetes  pods through the kubernetes client
    external    any class named by ``provider.module: package.ClassName``
    memory      in-process fake for tests (``ray.autoscaler.providers.memory``)

Writing a new one takes about a hundred lines: subclass, implement the abstract
methods, and run ``tests/provider_suite.py`` against it.
"""

from __future__ import annotations

import abc
import functools
import importlib
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ray.autoscaler.command_runner import CommandRunner, SSHCommandRunner


class NodeProvider(abc.ABC):
    """Launches and tracks the machines of one cluster (``cluster_name``)."""

    def __init__(self, provider_config: Mapping[str, Any], cluster_name: str):
        self.provider_config = dict(provider_config)
        self.cluster_name = cluster_name

    # ---------------------------------------------------------------- queries
    @abc.abstractmethod
    def non_terminated_nodes(self, tag_filters: Mapping[str, str]) -> list[str]:
        """Ids of this cluster's nodes that are pending or running and match every filter."""

    @abc.abstractmethod
    def is_running(self, node_id: str) -> bool: ...

    @abc.abstractmethod
    def is_terminated(self, node_id: str) -> bool: ...

    @abc.abstractmethod
    def node_tags(self, node_id: str) -> dict[str, str]: ...

    @abc.abstractmethod
    def external_ip(self, node_id: str) -> str | None: ...

    @abc.abstractmethod
    def internal_ip(self, node_id: str) -> str | None: ...

    # ---------------------------------------------------------------- changes
    @abc.abstractmethod
    def create_node(self, node_config: Mapping[str, Any], tags: Mapping[str, str], count: int):
        """Launch ``count`` nodes with these tags (plus the cluster-name tag)."""

    @abc.abstractmethod
    def set_node_tags(self, node_id: str, tags: Mapping[str, str]) -> None:
        """Merge ``tags`` into the node's tags."""

    @abc.abstractmethod
    def terminate_node(self, node_id: str) -> None: ...

    def terminate_nodes(self, node_ids: Sequence[str]) -> None:
        for node_id in node_ids:
            self.terminate_node(node_id)

    # ---------------------------------------------------------------- hooks
    #: True where terminating only forgets a machine that keeps running (local):
    #: ``ray down`` then stops Ray on it over SSH first.
    nodes_outlive_termination = False

    @classmethod
    def bootstrap_config(cls, config: dict[str, Any]) -> dict[str, Any]:
        """Fill in what the cloud needs before launching (keys, security groups...)."""
        return config

    def get_command_runner(
        self,
        node_id: str,
        auth_config: Mapping[str, Any],
        *,
        use_internal_ip: bool = False,
        process_runner: Any = None,
    ) -> CommandRunner:
        """How to run commands on a node; SSH by default."""
        return SSHCommandRunner(
            node_id=node_id,
            provider=self,
            auth_config=auth_config,
            cluster_name=self.cluster_name,
            use_internal_ip=use_internal_ip,
            process_runner=process_runner,
        )

    def cleanup(self) -> None:
        """Release clients/connections held by the provider."""
        return None


def synchronized(method):
    """Serialize calls on one provider: the monitor and its updater threads share it, and
    boto3 resources and googleapiclient's httplib2 transport are not thread-safe."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        lock = self.__dict__.get("_provider_lock")
        if lock is None:
            lock = self.__dict__.setdefault("_provider_lock", threading.RLock())
        with lock:
            return method(self, *args, **kwargs)

    return wrapper


class ProviderError(RuntimeError):
    """A provider could not be loaded or refused a request; the message says why."""


def _load_local():
    from ray.autoscaler.providers.local import LocalNodeProvider

    return LocalNodeProvider


def _load_aws():
    from ray.autoscaler.providers.aws import AWSNodeProvider

    return AWSNodeProvider


def _load_gcp():
    from ray.autoscaler.providers.gcp import GCPNodeProvider

    return GCPNodeProvider


def _load_kubernetes():
    from ray.autoscaler.providers.kubernetes import KubernetesNodeProvider

    return KubernetesNodeProvider


def _load_memory():
    from ray.autoscaler.providers.memory import InMemoryNodeProvider

    return InMemoryNodeProvider


_PROVIDERS: dict[str, Callable[[], type[NodeProvider]]] = {
    "local": _load_local,
    "aws": _load_aws,
    "gcp": _load_gcp,
    "kubernetes": _load_kubernetes,
    "memory": _load_memory,
}

_EXTRAS = {"aws": "boto3", "gcp": "google-api-python-client", "kubernetes": "kubernetes"}


def get_provider_class(provider_config: Mapping[str, Any]) -> type[NodeProvider]:
    kind = provider_config["type"]
    if kind == "external":
        return load_external_provider(provider_config["module"])
    try:
        loader = _PROVIDERS[kind]
    except KeyError:
        raise ProviderError(
            f"unknown provider.type {kind!r}: use one of {', '.join(_PROVIDERS)} or external"
        )
    try:
        return loader()
    except ImportError as e:
        extra = _EXTRAS.get(kind, "")
        raise ProviderError(
            f"the {kind} provider needs {extra}, which is not installed ({e}): "
            f"pip install 'ray-autoscaler[{kind}]'"
        )


def load_external_provider(module_path: str) -> type[NodeProvider]:
    """``package.ClassName`` or ``package.sub.ClassName`` -> the NodeProvider subclass."""
    module_name, _, class_name = module_path.rpartition(".")
    if not module_name:
        raise ProviderError(
            f"provider.module {module_path!r} must be package.ProviderClass "
            "(or package.sub_package.ProviderClass)"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ProviderError(f"provider.module {module_path!r}: cannot import {module_name}: {e}")
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, NodeProvider)):
        raise ProviderError(
            f"provider.module {module_path!r}: {class_name} is not a NodeProvider subclass "
            f"in {module_name}"
        )
    return cls


def get_node_provider(provider_config: Mapping[str, Any], cluster_name: str) -> NodeProvider:
    return get_provider_class(provider_config)(provider_config, cluster_name)
