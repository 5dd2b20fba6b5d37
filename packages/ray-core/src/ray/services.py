"""0.7 ``ray.services`` helpers."""

from ray._private.node import get_node_ip_address

__all__ = ["get_node_ip_address"]
