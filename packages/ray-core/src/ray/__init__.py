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

from ray import (
    exceptions,  # noqa: E402
    services,  # noqa: E402
)
from ray._private.api import (  # noqa: E402
    available_resources,
    cancel,
    cluster_resources,
    get,
    get_actor,
    get_dashboard_url,
    get_gpu_ids,
    get_resource_ids,
    get_runtime_context,  # noqa: E402
    get_webui_url,
    init,
    is_initialized,
    kill,
    method,
    nodes,
    put,
    register_custom_serializer,
    remote,
    shutdown,
    wait,
)
from ray._private.object_ref import ObjectID, ObjectRef  # noqa: E402
from ray._private.state import (  # noqa: E402
    errors,
    object_transfer_timeline,
    objects,
    profile,
    tasks,
    timeline,
)

error_info = errors
from ray.actor import ActorHandle  # noqa: E402

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
