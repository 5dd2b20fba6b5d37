"""Helpers for sharing large objects with every trial (`pin_in_object_store`)."""

from __future__ import annotations

import base64
from typing import Any

import ray

PINNED_OBJECT_PREFIX = "ray.tune.PinnedObject:"
_pinned_objects: list = []  # references held by the driver keep the objects alive


def pin_in_object_store(obj: Any) -> str:
    """Puts `obj` in the object store for the driver's lifetime; returns a picklable id."""
    ref = ray.put(obj)
    _pinned_objects.append(ref)
    import cloudpickle

    return PINNED_OBJECT_PREFIX + base64.b64encode(cloudpickle.dumps([ref])).decode("ascii")


def get_pinned_object(pinned_id: str) -> Any:
    """Fetches an object pinned by `pin_in_object_store` (from any task or trial)."""
    if not isinstance(pinned_id, str) or not pinned_id.startswith(PINNED_OBJECT_PREFIX):
        raise ValueError(f"{pinned_id!r} is not an id returned by pin_in_object_store")
    import cloudpickle

    [ref] = cloudpickle.loads(base64.b64decode(pinned_id[len(PINNED_OBJECT_PREFIX):]))
    return ray.get(ref)


def merge_dicts(old: dict, new: dict) -> dict:
    """Deep-merges `new` into a copy of `old`."""
    import copy

    merged = copy.deepcopy(old)
    for key, value in new.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_dicts(merged[key], value)
        else:
            merged[key] = value
    return merged
