"""A small key-value store in the GCS shared by every process of the cluster
(``ray.experimental.internal_kv``, as in Ray): libraries use it to publish state that
remote processes need, e.g. Tune's registry of named environments and trainables.

In local mode the store is this process's own dictionary.
"""

from __future__ import annotations

from ray._private import runtime as _rt
from ray._private.gcs import keys
from ray._private.runtime.interface import LocalModeUnsupported

_local: dict[str, bytes] = {}


def _key(key) -> str:
    return keys.kv("internal_kv", key.decode() if isinstance(key, bytes) else str(key))


def _gcs():
    """The cluster's GCS, or None in local mode or before ray.init (this process's dict)."""
    runtime = _rt.maybe_current()
    if runtime is None:
        return None
    try:
        return runtime.gcs_client()
    except LocalModeUnsupported:
        return None


def _internal_kv_initialized() -> bool:
    return _rt.maybe_current() is not None


def _internal_kv_get(key) -> bytes | None:
    gcs = _gcs()
    return gcs.get(_key(key)) if gcs is not None else _local.get(_key(key))


def _internal_kv_put(key, value: bytes, overwrite: bool = True) -> bool:
    """Store ``value``; True if the key already existed (then kept unless ``overwrite``)."""
    value = value.encode() if isinstance(value, str) else bytes(value)
    gcs = _gcs()
    if gcs is None:
        existed = _key(key) in _local
        if overwrite or not existed:
            _local[_key(key)] = value
        return existed
    if overwrite:
        existed = gcs.get(_key(key)) is not None
        gcs.set(_key(key), value)
        return existed
    return not gcs.set(_key(key), value, only_if_absent=True)


def _internal_kv_del(key) -> bool:
    gcs = _gcs()
    if gcs is None:
        return _local.pop(_key(key), None) is not None
    return bool(gcs.delete(_key(key)))


__all__ = ["_internal_kv_del", "_internal_kv_get", "_internal_kv_initialized",
           "_internal_kv_put"]
