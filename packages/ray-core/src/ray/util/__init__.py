"""Utilities today's Ray users expect: ActorPool, serializer registration, placement
groups, ``inspect_serializability``; ``ray.util.queue`` is imported on its own."""

from __future__ import annotations

from ray._private.runtime import custom_serializers as _custom
from ray.util import accelerators
from ray.util.actor_pool import ActorPool
from ray.util.check_serialize import inspect_serializability
from ray.util.placement_group import (
    get_current_placement_group,
    get_placement_group,
    placement_group,
    placement_group_table,
    remove_placement_group,
)


def register_serializer(cls, *, serializer, deserializer) -> None:
    """Serialize ``cls`` with ``serializer`` and rebuild it with ``deserializer``."""
    from ray._private.api import register_custom_serializer

    # Ray 2.x: this process only (values it serializes carry their deserializer along).
    register_custom_serializer(cls, serializer=serializer, deserializer=deserializer,
                               local=True)


def deregister_serializer(cls) -> None:
    _custom.deregister(cls)


def get_node_ip_address() -> str:
    from ray._private.node import get_node_ip_address as _ip

    return _ip()


__all__ = [
    "ActorPool",
    "accelerators",
    "inspect_serializability",
    "deregister_serializer",
    "get_current_placement_group",
    "get_node_ip_address",
    "get_placement_group",
    "placement_group",
    "placement_group_table",
    "register_serializer",
    "remove_placement_group",
]
