"""Cluster YAML: schema, documented defaults, and errors that name the key and the fix.

``load_config(path_or_dict)`` returns a frozen :class:`ClusterConfig`. Provider-specific
sections (``provider``, ``auth``, ``head_node``, ``worker_nodes``, ``docker``) stay plain
mappings because their keys belong to the cloud API they are passed to; everything the
autoscaler itself reads is a typed field.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import hashlib
import json
import os
from collections.abc import Mapping
from typing import Any

import jsonschema
import yaml

PROVIDER_TYPES = ("local", "aws", "gcp", "kubernetes", "external")
DEFAULT_HEAD_NODE_TYPE = "ray.head.default"
DEFAULT_WORKER_NODE_TYPE = "ray.worker.default"

_COMMAND_LIST = {"type": "array", "items": {"type": "string"}}
_RESOURCES = {"type": "object", "additionalProperties": {"type": "number", "minimum": 0}}

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["provider"],
    "additionalProperties": False,
    "properties": {
        "cluster_name": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]*$"},
        "min_workers": {"type": "integer", "minimum": 0},
        "initial_workers": {"type": "integer", "minimum": 0},
        "max_workers": {"type": "integer", "minimum": 0},
        "upscaling_speed": {"type": "number", "exclusiveMinimum": 0},
        "target_utilization_fraction": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "idle_timeout_minutes": {"type": "number", "minimum": 0},
        "provider": {
            "type": "object",
            "required": ["type"],
            "properties": {
                "type": {"enum": list(PROVIDER_TYPES)},
                "region": {"type": "string"},
                "availability_zone": {"type": "string"},
                "project_id": {"type": ["string", "null"]},
                "head_ip": {"type": "string"},
                "worker_ips": {"type": "array", "items": {"type": "string"}},
                "module": {"type": "string"},
                "namespace": {"type": "string"},
                "use_internal_ips": {"type": "boolean"},
            },
        },
        "auth": {
            "type": "object",
            "properties": {
                "ssh_user": {"type": "string"},
                "ssh_private_key": {"type": "string"},
            },
        },
        "docker": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "image": {"type": "string"},
                "container_name": {"type": "string"},
                "run_options": _COMMAND_LIST,
                "pull_before_run": {"type": "boolean"},
            },
        },
        "head_node": {"type": "object"},
        "worker_nodes": {"type": "object"},
        "available_node_types": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "required": ["resources"],
                "additionalProperties": False,
                "properties": {
                    "node_config": {"type": "object"},
                    "resources": _RESOURCES,
                    "min_workers": {"type": "integer", "minimum": 0},
                    "max_workers": {"type": "integer", "minimum": 0},
                },
            },
        },
        "head_node_type": {"type": "string"},
        "file_mounts": {"type": "object", "additionalProperties": {"type": "string"}},
        "initialization_commands": _COMMAND_LIST,
        "setup_commands": _COMMAND_LIST,
        "head_setup_commands": _COMMAND_LIST,
        "worker_setup_commands": _COMMAND_LIST,
        "head_start_ray_commands": _COMMAND_LIST,
        "worker_start_ray_commands": _COMMAND_LIST,
    },
}

# The documented defaults (Ray 0.7 ``example-full.yaml``), minus provider specifics.
DEFAULTS: dict[str, Any] = {
    "cluster_name": "default",
    "min_workers": 0,
    "initial_workers": 0,
    "max_workers": 2,
    "upscaling_speed": 1.0,
    "target_utilization_fraction": 0.8,
    "idle_timeout_minutes": 5,
    "auth": {"ssh_user": "ubuntu"},
    "docker": {"image": "", "container_name": "ray_docker", "run_options": []},
    "head_node": {},
    "worker_nodes": {},
    "file_mounts": {},
    "initialization_commands": [],
    "setup_commands": [],
    "head_setup_commands": [],
    "worker_setup_commands": [],
    "head_start_ray_commands": [
        "ray stop",
        "ulimit -n 65536; ray start --head --redis-port=6379 "
        "--object-manager-port=8076 --autoscaling-config=~/ray_bootstrap_config.yaml",
    ],
    "worker_start_ray_commands": [
        "ray stop",
        "ulimit -n 65536; ray start --redis-address=$RAY_HEAD_IP:6379 --object-manager-port=8076",
    ],
}

# What each key is for, used to tell the user how to fix it.
_KEY_HINTS = {
    "cluster_name": "a name made of letters, digits, '.', '_' or '-', e.g. cluster_name: default",
    "min_workers": "a whole number >= 0, e.g. min_workers: 0",
    "initial_workers": "a whole number >= 0, e.g. initial_workers: 0",
    "max_workers": "a whole number >= 0 and >= min_workers, e.g. max_workers: 2",
    "upscaling_speed": "a number > 0 (1.0 lets the cluster double per round)",
    "target_utilization_fraction": "a number in (0, 1], e.g. target_utilization_fraction: 0.8",
    "idle_timeout_minutes": "a number of minutes >= 0, e.g. idle_timeout_minutes: 5",
    "provider": "a mapping with at least `type`, e.g. provider: {type: local, head_ip: ..., worker_ips: [...]}",
    "provider.type": "one of " + ", ".join(PROVIDER_TYPES),
    "provider.worker_ips": "a list of IP addresses, e.g. worker_ips: [10.0.0.2, 10.0.0.3]",
    "file_mounts": "a mapping of remote path to local path, e.g. {/tmp/sha: /path/to/file}",
    "docker": "a mapping with `image` and `container_name`",
    "available_node_types": "a mapping of type name to {node_config, resources, min_workers, max_workers}",
}


class ConfigError(ValueError):
    """The cluster YAML is invalid; the message names the key and how to fix it."""

    def __init__(self, message: str, key: str = ""):
        super().__init__(message)
        self.key = key

    def __reduce__(self):
        return (type(self), (str(self), self.key))


@dataclasses.dataclass(frozen=True)
class NodeTypeConfig:
    """One launchable kind of node: the provider's node_config plus what it offers."""

    name: str
    node_config: Mapping[str, Any]
    # None: not declared (legacy head_node/worker_nodes configs); learned from live nodes.
    resources: Mapping[str, float] | None
    min_workers: int = 0
    max_workers: int | None = None


@dataclasses.dataclass(frozen=True)
class ClusterConfig:
    """A validated cluster config with every documented default filled in."""

    cluster_name: str
    min_workers: int
    initial_workers: int
    max_workers: int
    upscaling_speed: float
    target_utilization_fraction: float
    idle_timeout_minutes: float
    provider: Mapping[str, Any]
    auth: Mapping[str, Any]
    docker: Mapping[str, Any]
    head_node: Mapping[str, Any]
    worker_nodes: Mapping[str, Any]
    node_types: Mapping[str, NodeTypeConfig]
    head_node_type: str
    file_mounts: Mapping[str, str]
    initialization_commands: tuple[str, ...]
    setup_commands: tuple[str, ...]
    head_setup_commands: tuple[str, ...]
    worker_setup_commands: tuple[str, ...]
    head_start_ray_commands: tuple[str, ...]
    worker_start_ray_commands: tuple[str, ...]
    # The validated mapping (defaults filled), as shipped to the head node.
    raw: Mapping[str, Any] = dataclasses.field(repr=False, compare=False, default_factory=dict)

    @property
    def idle_timeout_s(self) -> float:
        return self.idle_timeout_minutes * 60.0

    @property
    def worker_node_types(self) -> dict[str, NodeTypeConfig]:
        return {n: t for n, t in self.node_types.items() if n != self.head_node_type}

    def to_dict(self) -> dict[str, Any]:
        return copy.deepcopy(dict(self.raw))

    def replace(self, **changes: Any) -> ClusterConfig:
        """A copy with top-level keys changed and re-validated (e.g. ``max_workers``)."""
        data = self.to_dict()
        data.update(changes)
        if "initial_workers" not in changes:
            # Overriding the limits (ray up --min-workers/--max-workers) drags the
            # initial count along instead of failing on it.
            low, high = data["min_workers"], data["max_workers"]
            data["initial_workers"] = min(max(data["initial_workers"], low), max(high, low))
        return load_config(data)


def load_config(source: str | os.PathLike | Mapping[str, Any]) -> ClusterConfig:
    """Validate a cluster YAML (a path or an already-parsed mapping) and fill defaults."""
    where = ""
    if isinstance(source, Mapping):
        data = copy.deepcopy(dict(source))
    else:
        where = f"{os.fspath(source)}: "
        try:
            with open(source) as f:
                data = yaml.safe_load(f)
        except OSError as e:
            raise ConfigError(f"cannot read cluster config {os.fspath(source)!r}: {e.strerror}")
        except yaml.YAMLError as e:
            raise ConfigError(f"{where}not valid YAML: {e}")
        if not isinstance(data, dict):
            raise ConfigError(f"{where}the file must hold a mapping of keys, e.g. `provider:`")
    _validate(data, where)
    filled = _fill_defaults(data)
    _check_consistency(filled, where)
    return _build(filled)


def _validate(data: dict, where: str) -> None:
    validator = jsonschema.Draft7Validator(SCHEMA)
    errors = sorted(validator.iter_errors(data), key=lambda e: (len(e.path), list(e.path)))
    if not errors:
        return
    # A file full of mistakes gets all of them in one error, not one per attempt.
    problems = [problem for error in errors for problem in _explain_all(error, data)]
    problems = list({str(p): p for p in problems}.values())
    first = problems[0]
    if len(problems) == 1:
        raise ConfigError(f"{where}{first}", key=first.key)
    listing = "\n".join(f"  - {p}" for p in problems)
    raise ConfigError(f"{where}{len(problems)} problems:\n{listing}", key=first.key)


def _explain_all(error: jsonschema.ValidationError, data: dict) -> list[ConfigError]:
    if error.validator != "additionalProperties":
        return [_explain(error, data, "")]
    parent = data
    for part in error.absolute_path:
        parent = parent[part]
    return [_explain(error, data, "", unknown_key=key)
            for key in sorted(set(parent) - set(error.schema.get("properties", {})))]


def _explain(error: jsonschema.ValidationError, data: dict, where: str,
             unknown_key: str | None = None) -> ConfigError:
    path = ".".join(str(p) for p in error.absolute_path)
    if error.validator == "additionalProperties":
        parent = data
        for part in error.absolute_path:
            parent = parent[part]
        allowed = list(error.schema.get("properties", {}))
        unknown = sorted(set(parent) - set(allowed))
        key = unknown_key or (unknown[0] if unknown else "?")
        full = f"{path}.{key}" if path else key
        close = difflib.get_close_matches(key, allowed, n=1)
        fix = f"did you mean `{close[0]}`?" if close else f"known keys: {', '.join(allowed)}"
        return ConfigError(f"{where}unknown key `{full}`: {fix}", key=full)
    if error.validator == "required":
        missing = error.message.split("'")[1]
        full = f"{path}.{missing}" if path else missing
        hint = _KEY_HINTS.get(full, "see example-full.yaml for its format")
        return ConfigError(f"{where}missing required key `{full}`: add it, as {hint}", key=full)
    hint = _KEY_HINTS.get(path) or _KEY_HINTS.get(path.split(".")[0], "")
    fix = f"; expected {hint}" if hint else ""
    return ConfigError(
        f"{where}key `{path or '<top level>'}` is invalid: {error.message}{fix}", key=path
    )


def _fill_defaults(data: dict) -> dict:
    filled = copy.deepcopy(DEFAULTS)
    for key, value in data.items():
        if isinstance(value, dict) and isinstance(filled.get(key), dict):
            filled[key] = {**filled[key], **value}
        else:
            filled[key] = value
    if "initial_workers" not in data:
        filled["initial_workers"] = filled["min_workers"]
    if filled["provider"]["type"] == "local" and "max_workers" not in data:
        # A private cluster can only grow to the machines it lists.
        filled["max_workers"] = len(filled["provider"].get("worker_ips", []))
    return filled


def _check_consistency(data: dict, where: str) -> None:
    def fail(key: str, message: str) -> None:
        raise ConfigError(f"{where}key `{key}`: {message}", key=key)

    if data["min_workers"] > data["max_workers"]:
        fail(
            "min_workers",
            f"min_workers ({data['min_workers']}) is above max_workers ({data['max_workers']}): "
            "lower min_workers or raise max_workers",
        )
    if not data["min_workers"] <= data["initial_workers"] <= data["max_workers"]:
        fail("initial_workers", "must lie between min_workers and max_workers")
    provider = data["provider"]
    required = {
        "local": ("head_ip", "worker_ips"),
        "aws": ("region",),
        "gcp": ("region", "availability_zone", "project_id"),
        "external": ("module",),
    }
    for key in required.get(provider["type"], ()):
        if provider.get(key) in (None, ""):
            fail(
                f"provider.{key}",
                f"the {provider['type']} provider needs it: add provider.{key} "
                f"({_KEY_HINTS.get('provider.' + key, 'see ' + provider['type'] + '/example-full.yaml')})",
            )
    if provider["type"] == "local" and len(provider["worker_ips"]) < data["max_workers"]:
        fail(
            "max_workers",
            f"max_workers ({data['max_workers']}) exceeds the {len(provider['worker_ips'])} "
            "machines in provider.worker_ips: list more IPs or lower max_workers",
        )
    types = data.get("available_node_types")
    if types is not None and data.get("head_node_type") not in types:
        fail(
            "head_node_type",
            f"must name one of available_node_types ({', '.join(types)})",
        )
    if types is None and "head_node_type" in data:
        fail("head_node_type", "only meaningful with available_node_types: remove it or add them")


def _build(data: dict) -> ClusterConfig:
    if "available_node_types" in data:
        node_types = {
            name: NodeTypeConfig(
                name=name,
                node_config=t.get("node_config", {}),
                resources=dict(t["resources"]),
                min_workers=t.get("min_workers", 0),
                max_workers=t.get("max_workers"),
            )
            for name, t in data["available_node_types"].items()
        }
        head_type = data["head_node_type"]
    else:
        head_type = DEFAULT_HEAD_NODE_TYPE
        node_types = {
            head_type: NodeTypeConfig(head_type, data["head_node"], None),
            DEFAULT_WORKER_NODE_TYPE: NodeTypeConfig(
                DEFAULT_WORKER_NODE_TYPE, data["worker_nodes"], None, max_workers=None
            ),
        }
    fields = {f.name for f in dataclasses.fields(ClusterConfig)}
    simple = {k: v for k, v in data.items() if k in fields and k != "head_node_type"}
    for key, value in simple.items():
        if isinstance(value, list):
            simple[key] = tuple(value)
    return ClusterConfig(**simple, node_types=node_types, head_node_type=head_type, raw=data)


def hash_launch_config(node_config: Mapping[str, Any], auth: Mapping[str, Any]) -> str:
    """Changes when the provider would launch a different machine."""
    return _hash({"node_config": node_config, "auth": auth})


def hash_runtime_config(config: ClusterConfig, *, head: bool) -> str:
    """Changes when a node must re-run its setup: commands or file_mounts contents changed."""
    contents = {}
    for remote, local in sorted(config.file_mounts.items()):
        contents[remote] = _hash_path(os.path.expanduser(local))
    kind = "head" if head else "worker"
    return _hash(
        {
            "file_mounts": contents,
            "initialization_commands": config.initialization_commands,
            "setup_commands": config.setup_commands,
            "role_setup": getattr(config, f"{kind}_setup_commands"),
            "start": getattr(config, f"{kind}_start_ray_commands"),
            "docker": config.docker,
        }
    )


def _hash(value: Any) -> str:
    return hashlib.sha1(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def _hash_path(path: str) -> str:
    digest = hashlib.sha1()
    if os.path.isdir(path):
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for name in sorted(files):
                full = os.path.join(root, name)
                digest.update(os.path.relpath(full, path).encode())
                digest.update(_hash_path(full).encode())
    elif os.path.exists(path):
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()
