"""Cluster launcher and autoscaler: ``ray up/down/exec/...`` and the head node's monitor.

Public pieces:

- :func:`load_config` / :class:`ClusterConfig`: the validated cluster YAML.
- :class:`NodeProvider`: the interface behind ``provider.type`` (local, aws, gcp,
  kubernetes, external) and :func:`get_node_provider`.
- :func:`plan`: the pure scaling decision (demand + nodes + clock -> launch/terminate).
- :class:`StandardAutoscaler` and :class:`Monitor`: the loop on the head node.
- ``ray.autoscaler.commands``: ``create_or_update_cluster``, ``teardown_cluster``, ...
"""

from ray.autoscaler import _require_core  # noqa: F401
from ray.autoscaler.config import ClusterConfig, ConfigError, load_config
from ray.autoscaler.planner import plan

__all__ = ["ClusterConfig", "ConfigError", "load_config", "plan"]
