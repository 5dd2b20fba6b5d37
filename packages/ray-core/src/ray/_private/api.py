"""The public functions of ``import ray``: init, shutdown, get, put, wait, remote, ...

Each turns its keyword arguments into typed values at the boundary and calls
the current runtime (cluster or local mode); none branches on the mode.
"""

from __future__ import annotations

import atexit
import inspect
import logging
import os
import threading

from ray._private import runtime as _rt
from ray._private import runtime_env
from ray._private.config import build_config
from ray._private.object_ref import ObjectRef
from ray._private.options import ActorOptions, TaskOptions
from ray._private.suggest import unknown_keyword_error

logger = logging.getLogger("ray")

_INIT_LOCK = threading.RLock()
_INIT_PARAMS = {
    "address", "redis_address", "num_cpus", "num_gpus", "resources", "object_store_memory",
    "redis_max_memory", "log_to_driver", "node_ip_address", "object_id_seed", "local_mode",
    "redirect_worker_output", "redirect_output", "ignore_reinit_error", "num_redis_shards",
    "redis_max_clients", "redis_password", "plasma_directory", "huge_pages", "include_webui",
    "include_dashboard", "dashboard_host", "dashboard_port", "webui_host", "job_id",
    "configure_logging", "logging_level", "logging_format", "plasma_store_socket_name",
    "raylet_socket_name", "temp_dir", "_temp_dir", "load_code_from_local", "_internal_config",
    "_system_config", "namespace", "num_workers", "driver_mode", "num_custom_resource",
    "runtime_env", "_redis_password", "_node_ip_address", "_plasma_directory",
}


def init(address: str | None = None, **kwargs):
    """Start a single-node cluster (no address) or connect to a running one.

    Accepts every parameter of the documented 0.2.2 and 0.7 signatures plus
    today's ``address=``, ``namespace=`` and ``include_dashboard=``. Returns a
    dict with the addresses of the started (or joined) processes.
    """
    for key in kwargs:
        if key not in _INIT_PARAMS:
            raise unknown_keyword_error("ray.init()", key, _INIT_PARAMS)
    with _INIT_LOCK:
        if _rt.maybe_current() is not None:
            if kwargs.get("ignore_reinit_error"):
                logger.info("Calling ray.init() again after it has already been called.")
                return RayContext(_rt.current().address_info)
            raise RuntimeError(
                "Maybe you called ray.init twice by accident? This error can be suppressed "
                "by passing ignore_reinit_error=True or by calling ray.shutdown() first."
            )
        if kwargs.get("configure_logging", True):
            logging.basicConfig(
                level=kwargs.get("logging_level", logging.INFO),
                format=kwargs.get("logging_format")
                or "%(asctime)s\t%(levelname)s %(filename)s:%(lineno)s -- %(message)s",
            )
        address = address or kwargs.pop("redis_address", None)
        config = build_config(kwargs.get("_internal_config") or kwargs.get("_system_config"))
        if kwargs.get("load_code_from_local"):
            import dataclasses

            config = dataclasses.replace(config, load_code_from_local=True)
        local_env = runtime_env.validate(kwargs.get("runtime_env"))
        if kwargs.get("local_mode") or kwargs.get("driver_mode") in (1, "PYTHON_MODE"):
            from ray._private.runtime.local_mode import LocalRuntime

            runtime = LocalRuntime(kwargs, config)
            runtime.runtime_env = local_env or {}  # reported, not applied: no workers
        else:
            from ray._private.driver import start_driver

            # Packed before anything starts: bad input leaves nothing behind.
            job_env = runtime_env.prepare(local_env,
                                          max_bytes=config.runtime_env_max_package_bytes)
            runtime = start_driver(address, kwargs, config)
            try:
                runtime.runtime_env = job_env.upload(runtime.gcs)
            except BaseException:
                runtime.shutdown()
                raise
        _rt.set_current(runtime)
        _register_atexit()
        return RayContext(runtime.address_info)


class RayContext(dict):
    """What ``ray.init`` returns: 0.7's address-info dict, with today's attribute access
    (``ctx.dashboard_url``, ``ctx.address_info``) and ``with ray.init(): ...``."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(
                f"RayContext has no {name!r}; it has {', '.join(sorted(self))}"
            ) from None

    @property
    def address_info(self) -> dict:
        return dict(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        shutdown()
        return False


_atexit_registered = False


def _register_atexit():
    global _atexit_registered
    if not _atexit_registered:
        atexit.register(shutdown, True)
        _atexit_registered = True


def shutdown(exiting_interpreter: bool = False, _exiting_interpreter: bool = False) -> None:
    """Disconnect and stop the processes ray.init started. Safe to call twice."""
    with _INIT_LOCK:
        runtime = _rt.maybe_current()
        if runtime is None:
            return
        _rt.set_current(None)
        runtime.shutdown()
        dashboard_process = getattr(runtime, "dashboard_process", None)
        if dashboard_process is not None:  # started by this driver on a joined cluster
            from ray import dashboard

            dashboard.stop(dashboard_process)


def is_initialized() -> bool:
    return _rt.maybe_current() is not None


def _check_refs(object_refs, where):
    for ref in object_refs:
        if not isinstance(ref, ObjectRef):
            raise TypeError(
                f"{where} expects ObjectRefs (or a list of them), got a "
                f"{type(ref).__name__}: {ref!r:.80}"
            )


def get(object_refs, *, timeout: float | None = None):
    """Return the value of one ObjectRef, or the values of a list of them."""
    rt = _rt.current()
    if isinstance(object_refs, ObjectRef):
        return rt.get([object_refs], timeout)[0]
    if not isinstance(object_refs, list | tuple):
        raise TypeError(
            "ray.get expects an ObjectRef or a list of ObjectRefs, got a "
            f"{type(object_refs).__name__}"
        )
    _check_refs(object_refs, "ray.get")
    if timeout is not None and timeout < 0:
        raise ValueError("timeout must be >= 0 (or None to wait forever)")
    return rt.get(list(object_refs), timeout)


def put(value, *, weakref: bool = False, _owner=None) -> ObjectRef:
    """Store ``value`` in the object store and return its ObjectRef."""
    return _rt.current().put(value)


def wait(object_refs, *, num_returns: int = 1, timeout: float | None = None,
         fetch_local: bool = True):
    """Return (ready, not_ready) once ``num_returns`` refs are ready or ``timeout`` s pass."""
    if isinstance(object_refs, ObjectRef):
        raise TypeError("ray.wait expects a list of ObjectRefs, not a single ObjectRef")
    object_refs = list(object_refs)
    _check_refs(object_refs, "ray.wait")
    if len(set(object_refs)) != len(object_refs):
        raise ValueError("ray.wait got duplicate ObjectRefs: pass each ref once")
    if num_returns <= 0:
        raise ValueError(f"num_returns must be positive, got {num_returns}")
    if num_returns > len(object_refs):
        raise ValueError(
            f"num_returns ({num_returns}) cannot exceed the number of refs ({len(object_refs)})"
        )
    if timeout is not None and timeout < 0:
        raise ValueError("timeout must be >= 0 seconds (or None)")
    if not object_refs:
        return [], []
    return _rt.current().wait(object_refs, num_returns, timeout, fetch_local)


def remote(*args, **kwargs):
    """Turn a function into a remote function or a class into an actor class."""
    from ray.actor import ActorClass
    from ray.remote_function import RemoteFunction

    def make(target, options):
        if inspect.isclass(target):
            return ActorClass(target, ActorOptions.from_kwargs(options))
        if callable(target):
            return RemoteFunction(target, TaskOptions.from_kwargs(options))
        raise TypeError(
            f"@ray.remote must decorate a function or a class, got {type(target).__name__}"
        )

    if len(args) == 1 and not kwargs and callable(args[0]):
        return make(args[0], {})
    if args:
        raise TypeError(
            "@ray.remote takes either a function/class or keyword arguments only, e.g. "
            "@ray.remote(num_cpus=2)"
        )
    return lambda target: make(target, kwargs)


def get_gpu_ids(as_str: bool = False):
    ids = [i for i, _ in _rt.current().resource_ids_now().get("GPU", ())]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES_ORIGINAL")
    if visible:
        mapping = visible.split(",")
        ids = [int(mapping[i]) if i < len(mapping) else i for i in ids]
    return [str(i) for i in ids] if as_str else ids


def get_resource_ids():
    return {k: [(i, f) for i, f in v] for k, v in _rt.current().resource_ids_now().items()}


def get_webui_url():
    """The dashboard's URL (``http://host:port``), or None when the cluster runs none."""
    rt = _rt.current()
    url = rt.address_info.get("webui_url")
    if url is None and getattr(rt, "gcs", None) is not None:  # started after we connected
        from ray import dashboard

        info = dashboard.lookup(rt.gcs)
        url = info["url"] if info else None
    return url


get_dashboard_url = get_webui_url


def nodes():
    return _rt.current().nodes()


def cluster_resources():
    return _rt.current().cluster_resources()


def available_resources():
    return _rt.current().available_resources()


def kill(actor, *, no_restart: bool = True):
    from ray.actor import ActorHandle

    if not isinstance(actor, ActorHandle):
        raise TypeError(f"ray.kill expects an actor handle, got {type(actor).__name__}")
    _rt.current().kill_actor(actor._actor_id, no_restart)


def cancel(object_ref, *, force: bool = False, recursive: bool = True):
    if not isinstance(object_ref, ObjectRef):
        raise TypeError(f"ray.cancel expects an ObjectRef, got {type(object_ref).__name__}")
    _rt.current().cancel(object_ref, force)


def get_actor(name: str, namespace: str | None = None):
    return _rt.current().get_named_actor(name, namespace)


def method(*args, **kwargs):
    """Annotate an actor method: ``@ray.method(num_returns=2)`` (or ``num_return_vals``)."""
    valid = {"num_returns", "num_return_vals", "concurrency_group", "max_task_retries",
             "retry_exceptions", "enable_task_events", "_generator_backpressure_num_objects"}
    for key in kwargs:
        if key not in valid:
            raise unknown_keyword_error("@ray.method", key, valid)
    num_returns = kwargs.get("num_returns", kwargs.get("num_return_vals", 1))

    def annotate(fn):
        fn.__ray_num_returns__ = num_returns
        return fn

    if args and callable(args[0]) and not kwargs:
        return annotate(args[0])
    return annotate


def register_custom_serializer(cls, use_pickle=False, use_dict=False, serializer=None,
                               deserializer=None, local=False, job_id=None, class_id=None):
    """Tell ray how to serialize ``cls`` (0.7 API)."""
    from ray._private.runtime import custom_serializers

    custom_serializers.register(
        cls, use_pickle=use_pickle, use_dict=use_dict, serializer=serializer,
        deserializer=deserializer,
    )


def get_runtime_context():
    from ray.runtime_context import get_runtime_context as _get

    return _get()
