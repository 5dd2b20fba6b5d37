"""ray: a fast distributed execution framework with the Ray API.

    import ray
    ray.init()

    @ray.remote
    def f(x):
        return x * x

    ray.get([f.remote(i) for i in range(4)])  # [0, 1, 4, 9]
"""

# ray is one import package assembled from several distributions (ray-core,
# ray-tune, ray-rllib, ...): only ray-core ships this file, and it must extend
# __path__ before anything imports a sub-package.
from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)

__version__ = "0.7.0"

# The API can load on first use (PEP 562): the raylet, started with RAY_LAZY_API=1,
# imports ``ray._private.*`` without paying for numpy and the serializers before it can
# start the worker zygote. Everyone else gets the whole API at ``import ray``.
_LAZY = {
    **dict.fromkeys(
        ["available_resources", "cancel", "cluster_resources", "get", "get_actor",
         "get_dashboard_url", "get_gpu_ids", "get_resource_ids", "get_runtime_context",
         "get_webui_url", "init", "is_initialized", "kill", "method", "nodes", "put",
         "register_custom_serializer", "remote", "shutdown", "wait"],
        "ray._private.api"),
    "ObjectID": "ray._private.object_ref",
    "ObjectRef": "ray._private.object_ref",
    **dict.fromkeys(["errors", "object_transfer_timeline", "objects", "profile", "tasks",
                     "timeline"], "ray._private.state"),
    "ActorHandle": "ray.actor",
}
_SUBMODULES = {"exceptions", "services"}
_ON_FIRST_USE = {"cloudpickle", "data", "job_config", "runtime_context", "runtime_env", "util"}  # as in Ray 2.x


def __getattr__(name):
    import importlib

    if name in _SUBMODULES or name in _ON_FIRST_USE:
        return importlib.import_module(f"ray.{name}")
    if name == "error_info":
        name_in_module, module = "errors", _LAZY["errors"]
    elif name in _LAZY:
        name_in_module, module = name, _LAZY[name]
    else:
        raise AttributeError(f"module 'ray' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name_in_module)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | _SUBMODULES | _ON_FIRST_USE | {"error_info"})


if __import__("os").environ.get("RAY_LAZY_API") != "1":
    for _name in [*_LAZY, *_SUBMODULES, "error_info"]:
        __getattr__(_name)
    del _name


# 0.2.2 driver modes (PYTHON_MODE ran tasks serially in the driver, like local_mode).
SCRIPT_MODE, WORKER_MODE, PYTHON_MODE, SILENT_MODE, LOCAL_MODE = 0, 1, 2, 3, 2

__all__ = [
    "ActorHandle",
    "ObjectID",
    "ObjectRef",
    "available_resources",
    "error_info",
    "errors",
    "get_runtime_context",
    "object_transfer_timeline",
    "objects",
    "profile",
    "services",
    "tasks",
    "timeline",
    "cancel",
    "cluster_resources",
    "exceptions",
    "get",
    "get_actor",
    "get_dashboard_url",
    "get_gpu_ids",
    "get_resource_ids",
    "get_webui_url",
    "init",
    "is_initialized",
    "kill",
    "method",
    "nodes",
    "put",
    "register_custom_serializer",
    "remote",
    "shutdown",
    "wait",
]
