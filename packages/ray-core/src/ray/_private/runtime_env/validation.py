"""Check a user's ``runtime_env`` and put it in canonical form (pure, no cluster).

Two forms of one runtime environment travel through the code:

* *local*: what the user wrote, validated, with local paths made absolute
  (``{"env_vars": {...}, "working_dir": "/abs/dir", "py_modules": [...],
  "excludes": [...]}``);
* *resolved*: what workers run with, once the driver has packed and uploaded every
  local path (``"working_dir": "gcs://_ray_pkg_<sha1>.zip"``). Only resolved envs
  reach the raylet; their canonical JSON's hash keys the worker pool.

Merging (``merge``) follows Ray: a task's or actor's env is laid over its parent's
(the job's, or the submitting task's): ``env_vars`` merge key by key, every other
field is replaced.
"""

from __future__ import annotations

import hashlib
import json
import os
import types
from collections.abc import Mapping

from ray._private.suggest import unknown_keyword_error

SUPPORTED = ("env_vars", "working_dir", "py_modules", "excludes")
GCS_SCHEME = "gcs://"

_INSTALL_FIX = ("There is no package installation in this runtime: install the packages on "
                "every node (e.g. in the Docker images under docker/, or `pip install` in "
                "each node's Python environment) and remove the key, or ship pure-Python "
                "code with runtime_env['py_modules'] / ['working_dir'].")
# Ray 2.x keys this runtime knows but does not provide, and what to do instead.
UNSUPPORTED = {
    "pip": _INSTALL_FIX,
    "uv": _INSTALL_FIX,
    "conda": _INSTALL_FIX,
    "py_executable": "Workers run the raylet's Python interpreter; start the nodes with the "
                     "interpreter you need instead.",
    "container": "Workers are not started in containers; run the nodes themselves from the "
                 "images in docker/ instead.",
    "image_uri": "Workers are not started in containers; run the nodes themselves from the "
                 "images in docker/ instead.",
    "worker_process_setup_hook": "Do the setup at the top of the task or in the actor's "
                                 "__init__ instead.",
    "nsight": "Profile workers with ray.timeline() or by running nsys on the node instead.",
    "rocprof_sys": "Profile workers with ray.timeline() or by running the profiler on the "
                   "node instead.",
    "config": "Environments are set up on first use with no timeout; remove the key.",
}


def validate(runtime_env) -> dict | None:
    """The local form of ``runtime_env``, or None for no environment.

    Raises TypeError/ValueError naming the bad field and the fix; nothing is packed.
    """
    if runtime_env is None:
        return None
    if not isinstance(runtime_env, Mapping):
        raise TypeError(
            f"runtime_env must be a dict (or ray.runtime_env.RuntimeEnv), got a "
            f"{type(runtime_env).__name__}: {runtime_env!r:.80}"
        )
    out: dict = {}
    for key, value in runtime_env.items():
        if key in UNSUPPORTED:
            raise ValueError(f"runtime_env[{key!r}] is not supported here. {UNSUPPORTED[key]}")
        if key not in SUPPORTED:
            raise unknown_keyword_error("runtime_env", key, SUPPORTED + tuple(UNSUPPORTED))
        if value is None:
            continue
        out[key] = _CHECKS[key](value)
    if "excludes" in out and not ("working_dir" in out or "py_modules" in out):
        out.pop("excludes")  # only a packing instruction: nothing to pack
    return out or None


def _check_env_vars(value) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise TypeError(f"runtime_env['env_vars'] must be a dict of str to str, got a "
                        f"{type(value).__name__}: {value!r:.80}")
    for name, val in value.items():
        if not isinstance(name, str) or not name or "=" in name:
            raise TypeError(f"runtime_env['env_vars'] has a bad variable name {name!r}: "
                            "names are non-empty strings without '='.")
        if not isinstance(val, str):
            raise TypeError(
                f"runtime_env['env_vars'][{name!r}] must be a str, got "
                f"{type(val).__name__} {val!r:.40}; write it as a string, e.g. {str(val)!r}."
            )
    return dict(value)


def _local_path(field: str, value) -> str:
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value:
        raise TypeError(f"runtime_env[{field!r}] entries must be local paths (str), got "
                        f"{type(value).__name__}: {value!r:.80}")
    if value.startswith(GCS_SCHEME):
        return value  # already uploaded (e.g. an env read from get_runtime_context())
    if "://" in value:
        raise ValueError(
            f"runtime_env[{field!r}]={value!r}: remote URIs are not supported here; "
            "download it and pass a local directory or .zip file."
        )
    path = os.path.abspath(os.path.expanduser(value))
    if not os.path.exists(path):
        raise ValueError(
            f"runtime_env[{field!r}]={value!r} does not exist (looked for {path}); "
            "pass an existing local directory or .zip file."
        )
    return path


def _check_working_dir(value) -> str:
    path = _local_path("working_dir", value)
    if not path.startswith(GCS_SCHEME) and not os.path.isdir(path) \
            and not path.endswith(".zip"):
        raise ValueError(f"runtime_env['working_dir']={value!r} must be a directory or a "
                         ".zip file, got a file.")
    return path


def _module_path(module: types.ModuleType) -> str:
    paths = list(getattr(module, "__path__", None) or [])
    if paths:  # a package: ship its directory
        return os.path.abspath(paths[0])
    file = getattr(module, "__file__", None)
    if not file:
        raise ValueError(f"runtime_env['py_modules']: module {module.__name__!r} has no "
                         "source file (built-in or namespace module); pass a directory.")
    return os.path.abspath(file)


def _check_py_modules(value) -> list[str]:
    if isinstance(value, str | os.PathLike | types.ModuleType) \
            or not isinstance(value, list | tuple):
        raise TypeError(f"runtime_env['py_modules'] must be a list of directories, .zip/.whl "
                        f"files or module objects, got a {type(value).__name__}: "
                        f"{value!r:.80}; wrap it in a list.")
    out = []
    for item in value:
        path = _module_path(item) if isinstance(item, types.ModuleType) \
            else _local_path("py_modules", item)
        if not path.startswith(GCS_SCHEME) and not os.path.isdir(path) \
                and not path.endswith((".zip", ".whl", ".py")):
            raise ValueError(f"runtime_env['py_modules'] entry {item!r}: expected a "
                             "directory, a .py, .zip or .whl file.")
        out.append(path)
    return out


def _check_excludes(value) -> list[str]:
    if isinstance(value, str) or not isinstance(value, list | tuple) \
            or not all(isinstance(p, str) for p in value):
        raise TypeError("runtime_env['excludes'] must be a list of gitignore-style pattern "
                        f"strings, got {value!r:.80}")
    return list(value)


_CHECKS = {
    "env_vars": _check_env_vars,
    "working_dir": _check_working_dir,
    "py_modules": _check_py_modules,
    "excludes": _check_excludes,
}


def merge(parent: Mapping | None, child: Mapping | None) -> dict:
    """``child`` laid over ``parent``: env_vars merge key-wise, other fields replace."""
    out = dict(parent or {})
    for key, value in (child or {}).items():
        if key == "env_vars":
            out[key] = {**out.get(key, {}), **value}
        else:
            out[key] = value
    return out


def env_key(resolved: Mapping) -> str:
    """Identity of a resolved env: workers started with one key never serve another."""
    canonical = json.dumps(resolved, sort_keys=True, separators=(",", ":"))
    return hashlib.sha1(canonical.encode()).hexdigest()[:20]
