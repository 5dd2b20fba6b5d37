"""Export functions and classes through the GCS once; import and cache them in workers.

A function's id is the hash of its pickled bytes, so redefining a function
(new code) gives a new id and later calls run the new version. Pickling happens
at the first ``.remote()`` call, not at decoration, so a function may refer to
helpers defined after it.

With ``load_code_from_local`` the GCS holds only ``module:qualname`` for code
that lives in an importable module, and workers import it from their own copy
(the same code must be installed on every node); code defined in ``__main__`` or
inside a function is still pickled.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import logging
import os
import sys
import threading

from ray import cloudpickle
from ray._private.gcs import keys
from ray._private.runtime import custom_serializers
from ray._private.runtime.serialization import serializability_report
from ray.exceptions import RaySystemError

logger = logging.getLogger(__name__)

LOCAL_PREFIX = b"\x00ray-local-code:"
# An exported function or class preceded by the custom serializers the job's workers
# apply when they load it: SERIALIZERS_PREFIX + 8-byte length + blob + the export.
SERIALIZERS_PREFIX = b"\x00ray-serializers:"


def local_reference(obj) -> bytes | None:
    """``module:qualname`` for objects a worker can import itself, else None."""
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", "")
    if not module or module == "__main__" or "<" in qualname:
        return None
    mod = sys.modules.get(module)
    if mod is None or getattr(mod, "__spec__", None) is None:
        return None
    return f"{module}:{qualname}".encode()


def import_local(reference: bytes):
    module, _, qualname = reference.decode().partition(":")
    try:
        obj = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise RaySystemError(
            f"load_code_from_local: this worker cannot import {module}.{qualname} ({exc}). "
            "Install the same code on every node (importable from the workers' sys.path), "
            "or start the cluster without --load-code-from-local."
        ) from None
    # The module attribute is the @ray.remote wrapper; workers want what it wraps.
    return getattr(obj, "_function", None) or getattr(obj, "__ray_actor_class__", None) or obj


# As Ray: a pickled function or class this big almost always captured a large object by
# accident (it would be stored in the GCS and loaded by every worker).
SIZE_WARN_BYTES = 10**7
SIZE_ERROR_BYTES = int(os.environ.get("RAY_FUNCTION_SIZE_ERROR_THRESHOLD", 10**8))


def _check_size(obj, size: int) -> None:
    if size <= SIZE_WARN_BYTES:
        return
    if inspect.isclass(obj):
        what = f"actor {obj.__name__}"
    else:
        what = f"remote function {getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', obj)}"
    if size < SIZE_ERROR_BYTES:
        logger.warning(
            "The %s is very large (%d MiB). Check that its definition is not implicitly "
            "capturing a large array or other object in scope. Tip: use ray.put() to put "
            "large objects in the Ray object store.", what, size // 2**20)
        return
    raise ValueError(
        f"The {what} is too large ({size // 2**20} MiB > FUNCTION_SIZE_ERROR_THRESHOLD="
        f"{SIZE_ERROR_BYTES // 2**20} MiB). Check that its definition is not implicitly "
        "capturing a large array or other object in scope. Tip: use ray.put() to put large "
        "objects in the Ray object store, and pass the ref to the task instead.")


class FunctionManager:
    def __init__(self, gcs, job_hex: str, load_code_from_local: bool = False):
        self._gcs = gcs
        self._job_hex = job_hex
        self.load_code_from_local = load_code_from_local
        self._exported: set[bytes] = set()
        self._cache: dict[bytes, object] = {}
        self._lock = threading.Lock()

    def export(self, obj) -> bytes:
        """Pickle ``obj`` and store it in the GCS (idempotent); return its id."""
        reference = local_reference(obj) if self.load_code_from_local else None
        try:
            # ray.cloudpickle keeps code objects' file names, so a worker's traceback
            # shows the source lines of the user's functions.
            pickled = LOCAL_PREFIX + reference if reference else cloudpickle.dumps(obj)
        except Exception as exc:
            qualified = f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', obj)}"
            what = (f"the actor class {qualified}.__init__" if inspect.isclass(obj)
                    else f"the function {qualified}")
            raise TypeError(f"Could not serialize {what}:\n"
                            f"{serializability_report(obj, exc)}") from exc
        _check_size(obj, len(pickled))
        serializers = custom_serializers.shared_blob()
        if serializers is not None:  # 0.7's register_custom_serializer(local=False)
            pickled = (SERIALIZERS_PREFIX + len(serializers).to_bytes(8, "little")
                       + serializers + pickled)
        function_id = hashlib.sha1(pickled).digest()
        with self._lock:
            if function_id in self._exported:
                return function_id
        self._gcs.set(keys.function(self._job_hex, function_id.hex()), pickled, only_if_absent=True)
        with self._lock:
            self._exported.add(function_id)
            self._cache.setdefault(function_id, obj)
        return function_id

    def load(self, function_id: bytes, job_hex: str | None = None):
        obj = self._cache.get(function_id)
        if obj is not None:
            return obj
        key = keys.function(job_hex or self._job_hex, function_id.hex())
        pickled = self._gcs.get(key)
        if pickled is None:
            raise RaySystemError(
                f"Function {function_id.hex()} is not in the GCS (key {key}): either the "
                "driver that defined it disconnected, or the GCS's Redis restarted without "
                "its state (start the head with `ray start --head --redis-persist` to keep "
                "it across restarts; define the function again to re-export it)."
            )
        if pickled.startswith(SERIALIZERS_PREFIX):
            start = len(SERIALIZERS_PREFIX) + 8
            size = int.from_bytes(pickled[len(SERIALIZERS_PREFIX):start], "little")
            custom_serializers.apply_shared(pickled[start:start + size])
            pickled = pickled[start + size:]
        if pickled.startswith(LOCAL_PREFIX):
            obj = import_local(pickled[len(LOCAL_PREFIX):])
        else:
            obj = cloudpickle.loads(pickled)
        with self._lock:
            self._cache[function_id] = obj
        return obj
