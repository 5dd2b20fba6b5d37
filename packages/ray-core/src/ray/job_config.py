"""``JobConfig``: settings of one job (one driver), as Ray 2.x's ``ray.job_config``.

    from ray.job_config import JobConfig
    ray.init(job_config=JobConfig(default_actor_lifetime="detached",
                                  code_search_path=["/opt/app"],
                                  runtime_env={"env_vars": {"MODE": "prod"}},
                                  metadata={"owner": "etl"}))

Every field is checked when it is set; a field this project cannot honour (Java
workers' ``jvm_options``) raises rather than being ignored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

ACTOR_LIFETIMES = ("detached", "non_detached")


class JobConfig:
    """The configuration of a job.

    Args:
        jvm_options: options for Java workers. This project runs Python workers only, so
            a non-empty list raises ``ValueError``.
        code_search_path: directories (or zip files) added to the ``sys.path`` of the
            job's workers, so they import the driver's modules from there.
        runtime_env: the job's runtime environment (the dict ``ray.init(runtime_env=)``
            takes); tasks and actors inherit it.
        metadata: an opaque ``{str: str}`` dict recorded with the job.
        ray_namespace: the job's namespace (named actors live in one);
            ``ray.init(namespace=)`` sets the same thing.
        default_actor_lifetime: ``"non_detached"`` (actors die with their owner, the
            default) or ``"detached"`` (actors outlive the job unless killed); an actor's
            own ``lifetime=`` option takes precedence.
    """

    def __init__(
        self,
        jvm_options: Sequence[str] | None = None,
        code_search_path: Sequence[str] | None = None,
        runtime_env: Mapping[str, Any] | None = None,
        _client_job: bool = False,
        metadata: Mapping[str, str] | None = None,
        ray_namespace: str | None = None,
        default_actor_lifetime: str = "non_detached",
        _py_driver_sys_path: Sequence[str] | None = None,
    ):
        if jvm_options:
            raise ValueError(
                f"JobConfig(jvm_options={list(jvm_options)!r}): this ray runs Python "
                "workers only, so Java options would have no effect; leave jvm_options unset."
            )
        self.jvm_options: list[str] = []
        self.code_search_path = _path_list("code_search_path", code_search_path)
        self._client_job = bool(_client_job)
        self.metadata: dict[str, str] = {}
        for key, value in dict(metadata or {}).items():
            self.set_metadata(key, value)
        self.ray_namespace: str | None = None
        if ray_namespace is not None:
            self.set_ray_namespace(ray_namespace)
        self.set_runtime_env(runtime_env)
        self.set_default_actor_lifetime(default_actor_lifetime)
        self._py_driver_sys_path = _path_list("_py_driver_sys_path", _py_driver_sys_path)

    # -- setters (Ray's names) ----------------------------------------------------------
    def set_metadata(self, key: str, value: str) -> None:
        """Record ``key: value`` with the job (overwrites an earlier value)."""
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(
                f"JobConfig metadata keys and values are strings; got {key!r}: {value!r}"
            )
        self.metadata[key] = value

    def set_runtime_env(self, runtime_env: Mapping[str, Any] | None,
                        validate: bool = False) -> None:
        """Replace the job's runtime_env; ``validate=True`` checks its fields now."""
        if runtime_env is not None and not isinstance(runtime_env, Mapping):
            raise TypeError(
                f"JobConfig runtime_env must be a dict (or ray.runtime_env.RuntimeEnv), "
                f"got {type(runtime_env).__name__}"
            )
        self.runtime_env: dict[str, Any] = dict(runtime_env or {})
        if validate:
            from ray._private import runtime_env as _runtime_env

            _runtime_env.validate(self.runtime_env)

    def set_ray_namespace(self, ray_namespace: str) -> None:
        if not isinstance(ray_namespace, str) or not ray_namespace:
            raise TypeError(f"ray_namespace must be a non-empty str, got {ray_namespace!r}")
        self.ray_namespace = ray_namespace

    def set_default_actor_lifetime(self, default_actor_lifetime: str) -> None:
        """``"detached"`` or ``"non_detached"``."""
        if default_actor_lifetime not in ACTOR_LIFETIMES:
            raise ValueError(
                "Default actor lifetime must be one of `detached`, `non_detached`; got "
                f"{default_actor_lifetime!r}"
            )
        self.default_actor_lifetime = default_actor_lifetime

    # -- reading ------------------------------------------------------------------------
    @property
    def detached_by_default(self) -> bool:
        """Whether actors created without ``lifetime=`` outlive the job."""
        return self.default_actor_lifetime == "detached"

    def worker_sys_path(self) -> list[str]:
        """The directories the job's workers put in front of ``sys.path``."""
        return [*self.code_search_path, *self._py_driver_sys_path]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (the keys :meth:`from_json` reads)."""
        return {
            "jvm_options": list(self.jvm_options),
            "code_search_path": list(self.code_search_path),
            "runtime_env": dict(self.runtime_env),
            "metadata": dict(self.metadata),
            "ray_namespace": self.ray_namespace,
            "default_actor_lifetime": self.default_actor_lifetime,
            "client_job": self._client_job,
            "py_driver_sys_path": list(self._py_driver_sys_path),
        }

    @classmethod
    def from_json(cls, job_config_json: Mapping[str, Any]) -> JobConfig:
        """Build a JobConfig from its JSON form (unknown keys are an error)."""
        known = {"jvm_options", "code_search_path", "runtime_env", "metadata",
                 "ray_namespace", "default_actor_lifetime", "client_job",
                 "py_driver_sys_path"}
        unknown = set(job_config_json) - known
        if unknown:
            raise ValueError(f"JobConfig.from_json: unknown keys {sorted(unknown)}; "
                             f"the known keys are {sorted(known)}")
        return cls(
            jvm_options=job_config_json.get("jvm_options"),
            code_search_path=job_config_json.get("code_search_path"),
            runtime_env=job_config_json.get("runtime_env"),
            metadata=job_config_json.get("metadata"),
            ray_namespace=job_config_json.get("ray_namespace"),
            default_actor_lifetime=job_config_json.get("default_actor_lifetime",
                                                       "non_detached"),
            _client_job=job_config_json.get("client_job", False),
            _py_driver_sys_path=job_config_json.get("py_driver_sys_path"),
        )

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items() if v)
        return f"JobConfig({fields})"


def _path_list(name: str, paths) -> list[str]:
    if paths is None:
        return []
    if not isinstance(paths, (list, tuple)):
        raise TypeError(f"The type of {name} is incorrect: {type(paths)}; pass a list of "
                        "directory or file paths")
    for p in paths:
        if not isinstance(p, str):
            raise TypeError(f"{name} entries must be str paths, got {p!r}")
    return list(paths)


__all__ = ["ACTOR_LIFETIMES", "JobConfig"]
