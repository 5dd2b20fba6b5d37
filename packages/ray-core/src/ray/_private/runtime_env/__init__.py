"""``runtime_env``: env_vars, working_dir and py_modules for a job's, task's or actor's workers.

Path of one environment::

    @ray.remote(runtime_env=...) / ray.init(runtime_env=...)
        validation.validate        local form, checked at the API boundary
    driver: prepare / upload       pack local paths (packaging), upload each package
                                   once to the GCS KV under its content hash
    submission: for_submission     lay the task's env over its parent's (merge), key it
    raylet: setup_on_node          fetch + unpack the packages once per node, build the
                                   worker's environment, start a dedicated worker
    worker: default_worker         reads its env (RAY_RUNTIME_ENV_JSON): the context's
                                   runtime_env and the base of its child tasks

Workers are dedicated to one (job, env key): a worker started for env A never runs
a task of env B, and tasks without an env keep the forked-from-zygote fast path.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys

from ray._private.gcs import keys
from ray._private.runtime_env import packaging
from ray._private.runtime_env.validation import GCS_SCHEME, env_key, merge, validate

ENV_JSON_VAR = "RAY_RUNTIME_ENV_JSON"

__all__ = ["ENV_JSON_VAR", "LeaseEnv", "Prepared", "adopt_in_worker", "env_key",
           "for_submission", "merge", "prepare", "put_paths_first", "setup_on_node", "validate"]


@dataclasses.dataclass(frozen=True)
class LeaseEnv:
    """A resolved env as a lease request carries it: ``[key, env]`` on the wire."""

    key: str
    env: dict

    def wire(self) -> list:
        return [self.key, self.env]


@dataclasses.dataclass
class Prepared:
    """A local env packed on the driver: its resolved form and the packages to upload."""

    resolved: dict
    packages: dict[str, bytes]

    def upload(self, gcs) -> dict:
        for uri, data in self.packages.items():
            upload_package(gcs, uri, data)
        self.packages = {}
        return self.resolved


def _package_key(uri: str) -> str:
    return keys.kv("runtime_env", uri)


def _marker_key(uri: str) -> str:
    return keys.kv("runtime_env_uploaded", uri)


def upload_package(gcs, uri: str, data: bytes) -> None:
    marker = _marker_key(uri)
    if gcs.get(marker) is None:  # content-addressed: an existing upload is the same bytes
        gcs.set(_package_key(uri), data)
        gcs.set(marker, str(len(data)).encode())


def prepare(local_env: dict | None, *, max_bytes: int) -> Prepared:
    """Pack every local path of a validated env (no I/O with the cluster)."""
    if not local_env:
        return Prepared({}, {})
    resolved = dict(local_env)
    excludes = resolved.pop("excludes", ())
    packages: dict[str, bytes] = {}

    def ship(path: str, *, working_dir: bool) -> str:
        if path.startswith(GCS_SCHEME):
            return path
        if os.path.isdir(path):
            prefix = "" if working_dir else os.path.basename(path.rstrip("/"))
            data = packaging.pack_directory(path, excludes, max_bytes=max_bytes,
                                            arc_prefix=prefix)
            suffix = ".zip"
        else:
            data = packaging.pack_file(path, max_bytes=max_bytes)
            if working_dir:
                data = packaging.strip_single_folder(data)
            suffix = ".whl" if path.endswith(".whl") else ".zip"
        uri = packaging.package_uri(data, suffix)
        packages[uri] = data
        return uri

    if "working_dir" in resolved:
        resolved["working_dir"] = ship(resolved["working_dir"], working_dir=True)
    if "py_modules" in resolved:
        resolved["py_modules"] = [ship(p, working_dir=False) for p in resolved["py_modules"]]
    return Prepared(resolved, packages)


def for_submission(base: dict, local_env: dict | None, cache_on, *, owner_id: bytes, gcs,
                   max_bytes: int) -> LeaseEnv | None:
    """The env a task or actor submitted by the process ``owner_id`` runs in (None: no
    env at all).

    ``local_env`` (validated, from the options) is packed and uploaded once per
    ``cache_on`` object (the frozen options) and laid over ``base``: the job's env in
    a driver, the worker's own env in a worker (children inherit).
    """
    cached = cache_on.__dict__.get("_lease_env") if cache_on is not None else None
    base_key = env_key(base) if base else ""
    if cached is not None and cached[0] == base_key and cached[1] == owner_id:
        return cached[2]
    resolved = merge(base, _uploaded(gcs, max_bytes, local_env, cache_on)) if local_env \
        else base
    lease_env = LeaseEnv(env_key(resolved), resolved) if resolved else None
    if cache_on is not None:
        object.__setattr__(cache_on, "_lease_env", (base_key, owner_id, lease_env))
    return lease_env


def _uploaded(gcs, max_bytes: int, local_env: dict, cache_on) -> dict:
    """``local_env`` packed and uploaded to this cluster's GCS, once per options object.

    The uploaded form travels with the options (pickled into workers), so a task that
    submits with options made by the driver reuses the driver's packages instead of
    looking for the driver's local paths on its own node."""
    cluster = getattr(gcs, "address", None)
    cached = cache_on.__dict__.get("_uploaded_env") if cache_on is not None else None
    if cached is not None and cached[0] == cluster and all(
            gcs.get(_marker_key(uri)) is not None for uri in _uris(cached[1])):
        return cached[1]
    resolved = prepare(local_env, max_bytes=max_bytes).upload(gcs)
    if cache_on is not None:
        object.__setattr__(cache_on, "_uploaded_env", (cluster, resolved))
    return resolved


def _uris(resolved: dict) -> list[str]:
    return [u for u in [resolved.get("working_dir"), *(resolved.get("py_modules") or ())]
            if u and u.startswith(GCS_SCHEME)]


def setup_on_node(gcs, resolved: dict, root: str, base_env: dict) -> tuple[dict, str | None]:
    """Fetch and unpack the env's packages under ``root``; the worker's environment and
    working directory. Runs on a raylet helper thread (blocking GCS reads, unzip)."""
    env = dict(base_env)
    for name, value in (resolved.get("env_vars") or {}).items():
        env[name] = _expand(value, base_env)
    paths, cwd = [], None
    if resolved.get("working_dir"):
        cwd = _install(gcs, resolved["working_dir"], root)
        paths.append(cwd)
    for uri in resolved.get("py_modules") or ():
        paths.append(_install(gcs, uri, root))
    if paths:
        old = env.get("PYTHONPATH")
        env["PYTHONPATH"] = os.pathsep.join(paths + ([old] if old else []))
    env[ENV_JSON_VAR] = json.dumps(resolved, sort_keys=True)
    env[PATHS_VAR] = os.pathsep.join(paths)
    return env, cwd


def _expand(value: str, base_env: dict) -> str:
    """``${NAME}`` in an env var's value refers to the node's own environment (as in Ray)."""
    return re.sub(r"\$\{(\w+)\}", lambda m: base_env.get(m.group(1), ""), value)


def _install(gcs, uri: str, root: str) -> str:
    target = os.path.join(root, packaging.local_name(uri))
    if os.path.exists(target):
        return target
    data = gcs.get(_package_key(uri))
    if data is None:
        from ray.exceptions import RuntimeEnvSetupError

        raise RuntimeEnvSetupError(
            f"runtime_env package {uri} is not in the GCS (was Redis restarted without "
            "--redis-persist?). Call ray.init(runtime_env=...) again, or pass the local "
            "path again in .options(runtime_env=...), to upload it."
        )
    return packaging.install(uri, data, root)


# -- worker side -----------------------------------------------------------------------------
PATHS_VAR = "RAY_RUNTIME_ENV_PATHS"
_worker_paths: list[str] = []


def adopt_in_worker() -> dict:
    """At worker start: the env the raylet started this worker with ({} for none)."""
    env_json = os.environ.pop(ENV_JSON_VAR, None)
    paths = os.environ.pop(PATHS_VAR, None)
    if not env_json:
        return {}
    _worker_paths[:] = paths.split(os.pathsep) if paths else []
    put_paths_first()
    return json.loads(env_json)


def put_paths_first() -> None:
    """The working_dir, then py_modules, lead sys.path (binding a job adds the driver's
    script folder in front; the env's copies must win)."""
    if not _worker_paths:
        return
    rest = [p for p in sys.path if p not in _worker_paths]
    sys.path[:] = [*_worker_paths, *rest]
