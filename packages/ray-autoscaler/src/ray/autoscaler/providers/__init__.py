"""Node provider implementations; load them through ``ray.autoscaler.node_provider``."""
