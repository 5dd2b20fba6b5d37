"""0.7 named actors: ``register_actor(name, handle)`` and ``get_actor(name)``."""

from __future__ import annotations

from ray._private import runtime as _runtime
from ray._private.gcs import keys
from ray.actor import ActorHandle


def register_actor(name: str, actor_handle: ActorHandle) -> None:
    if not isinstance(name, str) or not name:
        raise TypeError("The actor name must be a non-empty string")
    if not isinstance(actor_handle, ActorHandle):
        raise TypeError(f"register_actor needs an actor handle, got {type(actor_handle)}")
    rt = _runtime.current()
    key = keys.named_actor(rt.identity().namespace, name)
    if not rt.gcs_client().set(key, actor_handle._actor_id.binary(), only_if_absent=True):
        raise ValueError(f"The name {name!r} is already registered to another actor")


def get_actor(name: str) -> ActorHandle:
    info = _runtime.current().named_actor(name, None)
    return ActorHandle(info.actor_id, info.class_name, info.methods)
