"""Export functions and classes through the GCS once; import and cache them in workers.

A function's id is the hash of its pickled bytes, so redefining a function
(new code) gives a new id and later calls run the new version. Pickling happens
at the first ``.remote()`` call, not at decoration, so a function may refer to
helpers defined after it.
"""

from __future__ import annotations

import hashlib
import threading

import cloudpickle

from ray._private.gcs import keys
from ray.exceptions import RaySystemError


class FunctionManager:
    def __init__(self, gcs, job_hex: str):
        self._gcs = gcs
        self._job_hex = job_hex
        self._exported: set[bytes] = set()
        self._cache: dict[bytes, object] = {}
        self._lock = threading.Lock()

    def export(self, obj) -> bytes:
        """Pickle ``obj`` and store it in the GCS (idempotent); return its id."""
        try:
            pickled = cloudpickle.dumps(obj)
        except Exception as exc:
            raise TypeError(
                f"Could not serialize {getattr(obj, '__qualname__', obj)!r} for remote "
                f"execution: {exc}. Remote functions and actor classes must be picklable "
                "(move locks, sockets and open files into the function body)."
            ) from exc
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
                f"Function {function_id.hex()} is not in the GCS (key {key}); was the "
                "driver that defined it disconnected?"
            )
        obj = cloudpickle.loads(pickled)
        with self._lock:
            self._cache[function_id] = obj
        return obj
