"""What a submitted job's entrypoint inherits from its supervisor (as in Ray).

The supervisor starts the entrypoint with ``RAY_ADDRESS`` (so a plain ``ray.init()``
joins the cluster), ``RAY_JOB_SUBMISSION_ID`` and ``RAY_JOB_CONFIG_JSON_ENV_VAR``
(``{"runtime_env": ...}``: the submission's runtime_env, its packages already in the
GCS). ``ray.init`` lays the runtime_env it is given over the job's with
``injected_runtime_env``; a field (or env var) given in both is an error unless
``RAY_OVERRIDE_JOB_RUNTIME_ENV=1``, when ``ray.init``'s wins.
"""

from __future__ import annotations

import copy
import json
import os

JOB_CONFIG_VAR = "RAY_JOB_CONFIG_JSON_ENV_VAR"
SUBMISSION_ID_VAR = "RAY_JOB_SUBMISSION_ID"
OVERRIDE_VAR = "RAY_OVERRIDE_JOB_RUNTIME_ENV"


def address_from_environment() -> str | None:
    """``$RAY_ADDRESS`` for ``ray.init()`` without an address (as in Ray): a submitted job's
    entrypoint joins its cluster. An http:// value names a dashboard (for ``ray job``), not
    a cluster to join, and is ignored here."""
    address = os.environ.get("RAY_ADDRESS", "").strip()
    if not address or address.startswith(("http://", "https://")):
        return None
    return address


def job_config_json(runtime_env: dict | None, metadata: dict | None = None) -> str:
    return json.dumps({"runtime_env": runtime_env or {}, "metadata": metadata or {}})


def injected_runtime_env(driver_env: dict | None) -> dict | None:
    """The runtime_env a driver runs with: its own, laid over its submission's if any."""
    text = os.environ.get(JOB_CONFIG_VAR)
    if not text:
        return driver_env
    try:
        job_env = (json.loads(text) or {}).get("runtime_env") or {}
    except (ValueError, AttributeError):
        raise ValueError(f"${JOB_CONFIG_VAR} is not the JSON object the job supervisor "
                         f"writes: {text[:200]!r}") from None
    merged = merge_envs(job_env, driver_env or {},
                        override=os.environ.get(OVERRIDE_VAR) == "1")
    if merged is None:
        raise ValueError(
            f"The job's runtime_env {job_env} and ray.init(runtime_env={driver_env}) set the "
            "same field or environment variable. Set it in one place, or set "
            f"{OVERRIDE_VAR}=1 to let ray.init's value win.")
    return merged or None


def merge_envs(parent: dict, child: dict, *, override: bool) -> dict | None:
    """Ray's job/driver merge: per field, env_vars per variable; None on a conflict."""
    parent, child = copy.deepcopy(parent), copy.deepcopy(child)
    parent_vars, child_vars = parent.pop("env_vars", {}), child.pop("env_vars", {})
    if not override and (set(parent) & set(child) or set(parent_vars) & set(child_vars)):
        return None
    parent.update(child)
    parent_vars.update(child_vars)
    if parent_vars:
        parent["env_vars"] = parent_vars
    return parent


__all__ = ["JOB_CONFIG_VAR", "OVERRIDE_VAR", "SUBMISSION_ID_VAR", "address_from_environment",
           "injected_runtime_env",
           "job_config_json", "merge_envs"]
