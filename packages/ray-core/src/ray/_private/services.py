"""Ray 2.x's home of the node helpers (``ray._private.services``); libraries such as
Modin import from here. The 0.7 spelling is ``ray.services``."""

from ray._private.node import get_node_ip_address

__all__ = ["get_node_ip_address"]
