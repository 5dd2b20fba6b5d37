"""``ray.runtime_env.RuntimeEnv``: a runtime environment as a dict (Ray 2.x API).

Accepted wherever a ``runtime_env`` dict is (``ray.init``, ``@ray.remote``,
``.options``); ``ray.get_runtime_context().runtime_env`` returns one. Supported
fields: ``env_vars``, ``working_dir``, ``py_modules``, ``excludes``; the others Ray
knows (``pip``, ``conda``, ``container``, ``uv``, ``image_uri``, ...) raise a
ValueError that says what to do instead. See ``ray._private.runtime_env``.
"""

from __future__ import annotations

import json

from ray._private.runtime_env.validation import validate


class RuntimeEnv(dict):
    """A dict of runtime-environment fields, validated when built."""

    def __init__(self, *, py_modules=None, working_dir=None, env_vars=None, excludes=None,
                 _validate: bool = True, **kwargs):
        fields = {"py_modules": py_modules, "working_dir": working_dir,
                  "env_vars": env_vars, "excludes": excludes, **kwargs}
        super().__init__({k: v for k, v in fields.items() if v is not None})
        if _validate:
            validate(self)

    def env_vars(self) -> dict:
        return dict(self.get("env_vars") or {})

    def working_dir(self) -> str:
        return self.get("working_dir") or ""

    def py_modules(self) -> list:
        return list(self.get("py_modules") or [])

    def to_dict(self) -> dict:
        return dict(self)

    def serialize(self) -> str:
        return json.dumps(self, sort_keys=True)

    @classmethod
    def deserialize(cls, serialized: str) -> RuntimeEnv:
        return cls(_validate=False, **json.loads(serialized))


__all__ = ["RuntimeEnv"]
