"""Cluster launcher and autoscaler: ``ray up/down/exec/...`` and the head node's monitor.

Public pieces:

- :func:`load_config` / :class:`ClusterConfig`: the validated cluster YAML.
- :class:`NodeProvider`: the interface behind ``provider.type`` (local, aws, gcp,
  kubernetes, external) and :func:`get_node_provider`.
- :func:`plan`: the pure scaling decision (demand + nodes + clock -> launch/terminate).
- :class:`StandardAutoscaler` and :class:`Monitor`: the loop on the head node.
- ``ray.autoscaler.launcher``: ``create_or_update_cluster``, ``teardown_cluster``, ...
  (the click commands of ``ray up/down/...`` are in ``ray.autoscaler.commands``).
"""

from ray.autoscaler import _require_core  # noqa: F401
from ray.autoscaler.autoscaler import Monitor, StandardAutoscaler
from ray.autoscaler.config import ClusterConfig, ConfigError, load_config
from ray.autoscaler.node_provider import NodeProvider, ProviderError, get_node_provider
from ray.autoscaler.planner import plan

__all__ = [
    "ClusterConfig",
    "ConfigError",
    "Monitor",
    "NodeProvider",
    "ProviderError",
    "StandardAutoscaler",
    "get_node_provider",
    "load_config",
    "plan",
]
