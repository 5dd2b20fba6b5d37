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

from ray._private import log_setup
from ray._private import runtime as _rt
from ray._private import runtime_env as runtime_env_mod
from ray._private.config import build_config, with_spilling_directory
from ray._private.job_env import address_from_environment, injected_runtime_env
from ray._private.object_ref import ObjectRef
from ray._private.options import ACTOR_UNSUPPORTED as UNSUPPORTED_FOR_METHODS
from ray._private.options import ActorOptions, TaskOptions, check_method_option
from ray._private.ref_generators import ObjectRefGenerator
from ray._private.runtime.interface import LocalModeUnsupported, Runtime
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
    "object_spilling_directory",
}


def init(address: str | None = None, *, num_cpus: float | None = None,
         num_gpus: float | None = None, resources: dict | None = None,
         object_store_memory: int | None = None, local_mode: bool = False,
         ignore_reinit_error: bool = False, include_dashboard: bool | None = None,
         dashboard_host: str | None = None, dashboard_port: int | None = None,
         job_config=None, configure_logging: bool = True, logging_level: int = logging.INFO,
         logging_format: str | None = None, log_to_driver: bool = True,
         namespace: str | None = None, runtime_env: dict | None = None, **kwargs):
    """Start a single-node cluster, or connect to a running one.

    Ray 2.x's signature (its keywords named), plus every parameter of the documented
    0.2.2 and 0.7 signatures through ``**kwargs`` (``redis_address=``, ``temp_dir=``, ...).
    Without an address: ``$RAY_ADDRESS``, else the cluster the last ``ray start`` on this
    machine recorded (if it still runs), else a new single-node cluster. Returns a dict
    with the addresses of the started (or joined) processes.
    """
    for key in kwargs:
        if key not in _INIT_PARAMS:
            raise unknown_keyword_error("ray.init()", key, _INIT_PARAMS | set(_NAMED_PARAMS))
    named = {"num_cpus": num_cpus, "num_gpus": num_gpus, "resources": resources,
             "object_store_memory": object_store_memory, "include_dashboard": include_dashboard,
             "dashboard_host": dashboard_host, "dashboard_port": dashboard_port,
             "logging_format": logging_format, "namespace": namespace,
             "runtime_env": runtime_env}
    kwargs.update({k: v for k, v in named.items() if v is not None})
    for key, value, default in (("local_mode", local_mode, False),
                                ("ignore_reinit_error", ignore_reinit_error, False),
                                ("configure_logging", configure_logging, True),
                                ("logging_level", logging_level, logging.INFO),
                                ("log_to_driver", log_to_driver, True)):
        if value != default:
            kwargs[key] = value
    if job_config is not None:
        _apply_job_config(job_config, kwargs)
    with _INIT_LOCK:
        if _rt.maybe_current() is not None:
            if kwargs.get("ignore_reinit_error"):
                logger.info("Calling ray.init() again after it has already been called.")
                return RayContext(_rt.current().address_info)
            raise RuntimeError(
                "Maybe you called ray.init twice by accident? This error can be suppressed "
                "by passing ignore_reinit_error=True or by calling ray.shutdown() first."
            )
        if kwargs.get("configure_logging", True):  # the `ray` logger only, never the root
            log_setup.configure_ray_logger(kwargs.get("logging_level", logging.INFO),
                                           kwargs.get("logging_format"))
        # $RAY_ADDRESS when no address is given, as in Ray (a submitted job's entrypoint).
        address = address or kwargs.pop("redis_address", None) or address_from_environment()
        config = build_config(kwargs.get("_internal_config") or kwargs.get("_system_config"))
        if kwargs.get("object_spilling_directory") is not None:  # Ray 2.x's spelling
            config = with_spilling_directory(config, kwargs["object_spilling_directory"])
        if kwargs.get("load_code_from_local"):
            import dataclasses

            config = dataclasses.replace(config, load_code_from_local=True)
        # A submitted job's runtime_env ($RAY_JOB_CONFIG_JSON_ENV_VAR) under ray.init's own.
        local_env = runtime_env_mod.validate(injected_runtime_env(kwargs.get("runtime_env")))
        if kwargs.get("local_mode") or kwargs.get("driver_mode") in (1, "PYTHON_MODE"):
            from ray._private.runtime.local_mode import LocalRuntime

            runtime: Runtime = LocalRuntime(kwargs, config)
            runtime.runtime_env = local_env or {}  # reported, not applied: no workers
        else:
            from ray._private.driver import start_driver

            # Packed before anything starts: bad input leaves nothing behind.
            job_env = runtime_env_mod.prepare(local_env,
                                              max_bytes=config.runtime_env_max_package_bytes)
            runtime = start_driver(address, kwargs, config)
            try:
                runtime.runtime_env = job_env.upload(runtime.gcs_client())
            except BaseException:
                runtime.shutdown()
                raise
        _rt.set_current(runtime)
        _register_atexit()
        return RayContext(runtime.address_info)


_NAMED_PARAMS = ("num_cpus", "num_gpus", "resources", "object_store_memory", "local_mode",
                 "ignore_reinit_error", "include_dashboard", "dashboard_host", "dashboard_port",
                 "job_config", "configure_logging", "logging_level", "logging_format",
                 "log_to_driver", "namespace", "runtime_env")


def _apply_job_config(job_config, kwargs: dict) -> None:
    """``ray.init(job_config=JobConfig(...))``: its namespace and runtime_env unless
    ``ray.init`` names its own (as in Ray), the rest for the driver to record."""
    from ray.job_config import JobConfig

    if not isinstance(job_config, JobConfig):
        raise TypeError(
            f"ray.init(job_config=...) takes a ray.job_config.JobConfig, got "
            f"{type(job_config).__name__}")
    if job_config.ray_namespace is not None:
        kwargs.setdefault("namespace", job_config.ray_namespace)
    if job_config.runtime_env and kwargs.get("runtime_env") is None:
        kwargs["runtime_env"] = dict(job_config.runtime_env)
    kwargs["job_config"] = job_config


def connected_runtime() -> Runtime:
    """The process's runtime; without one, ``ray.init()`` first, as Ray 2.x does for the
    first ``.remote()``, ``get``/``put``/``wait``, ``get_actor``, ... (auto-init; with
    ``RAY_ENABLE_AUTO_CONNECT=0`` an error says to call ``ray.init()``)."""
    runtime = _rt.maybe_current()
    if runtime is not None:
        return runtime
    if os.environ.get("RAY_ENABLE_AUTO_CONNECT", "") == "0":
        return _rt.current()  # raises, naming ray.init()
    with _INIT_LOCK:
        if _rt.maybe_current() is None:
            init()
    return _rt.current()


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
    rt = connected_runtime()
    if isinstance(object_refs, ObjectRef):
        return rt.get([object_refs], timeout)[0]
    if isinstance(object_refs, ObjectRefGenerator):
        return object_refs  # as Ray: iterate it for the refs of the yielded values
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
    return connected_runtime().put(value)


def wait(object_refs, *, num_returns: int = 1, timeout: float | None = None,
         fetch_local: bool = True):
    """Return (ready, not_ready) once ``num_returns`` refs are ready or ``timeout`` s pass."""
    if isinstance(object_refs, ObjectRef):
        raise TypeError("ray.wait expects a list of ObjectRefs, not a single ObjectRef")
    if not isinstance(object_refs, list | tuple):
        raise TypeError(
            f"ray.wait expects a list of ObjectRefs, got a {type(object_refs).__name__}")
    object_refs = list(object_refs)
    _check_refs(object_refs, "ray.wait")
    rt = connected_runtime()
    if not object_refs:
        return [], []
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
    return rt.wait(object_refs, num_returns, timeout, fetch_local)


def remote(*args, **kwargs):
    """Turn a function into a remote function or a class into an actor class."""
    from ray.actor import ActorClass
    from ray.remote_function import RemoteFunction

    def make(target, options):
        if inspect.isclass(target):
            return ActorClass._ray_from_class(target, ActorOptions.from_kwargs(options))
        if callable(target):
            return RemoteFunction(target, TaskOptions.from_kwargs(options))
        raise TypeError(
            f"@ray.remote must decorate a function or a class, got {type(target).__name__}"
        )

    if len(args) == 1 and not kwargs and callable(args[0]):
        return make(args[0], {})
    if args or not kwargs:
        raise TypeError(
            "The @ray.remote decorator must be applied either with no arguments and no "
            "parentheses, for example '@ray.remote', or it must be applied using some of "
            "the options of remote functions and actors, for example "
            "'@ray.remote(num_returns=2, resources={\"CustomResource\": 1})'."
        )
    return lambda target: make(target, kwargs)


def get_gpu_ids(as_str: bool = False):
    """The GPUs the running task or actor holds (also its ``CUDA_VISIBLE_DEVICES``): ids
    as its node names them (``CUDA_VISIBLE_DEVICES`` when the node started, else 0..N-1);
    empty in a driver."""
    ids = [i for i, _ in connected_runtime().resource_ids_now().get("GPU", ())]
    return [str(i) for i in ids] if as_str else ids


def get_resource_ids():
    return {k: [(i, f) for i, f in v] for k, v in _rt.current().resource_ids_now().items()}


def get_webui_url():
    """The dashboard's URL (``http://host:port``), or None when the cluster runs none."""
    rt = _rt.current()
    url = rt.address_info.get("webui_url")
    if url is None:  # a dashboard started after we connected
        try:
            gcs = rt.gcs_client()
        except LocalModeUnsupported:
            return None  # no cluster, no dashboard
        from ray import dashboard

        info = dashboard.lookup(gcs)
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
    connected_runtime().kill_actor(actor._actor_id.binary(), no_restart)


def cancel(object_ref, *, force: bool = False, recursive: bool = True):
    """Stop the task that makes ``object_ref``: a task not started yet never runs, a
    running one is interrupted (``force=True``: its worker process exits); ``ray.get``
    then raises ``TaskCancelledError`` (or ``WorkerCrashedError`` after ``force``).
    ``recursive``: also cancel the tasks it submitted. A finished task is unaffected."""
    if isinstance(object_ref, ObjectRefGenerator):
        object_ref = object_ref.completed()
    if not isinstance(object_ref, ObjectRef):
        raise TypeError(
            f"ray.cancel() only supported for object refs. For actors, try ray.kill(). "
            f"Got: {type(object_ref)}.")
    connected_runtime().cancel(object_ref, force, recursive)


def get_actor(name: str, namespace: str | None = None):
    from ray.actor import ActorHandle

    info = connected_runtime().named_actor(name, namespace)
    return ActorHandle(info.actor_id, info.class_name, info.methods)


def method(*args, **kwargs):
    """Annotate an actor method: ``@ray.method(num_returns=2)`` (or ``num_return_vals``)."""
    valid = {"num_returns", "num_return_vals", "concurrency_group", "max_task_retries",
             "retry_exceptions", "enable_task_events"}
    for key in kwargs:
        if key in UNSUPPORTED_FOR_METHODS:
            raise ValueError(UNSUPPORTED_FOR_METHODS[key])
        if key not in valid:
            raise unknown_keyword_error("@ray.method", key, valid)
    num_returns = kwargs.get("num_returns", kwargs.get("num_return_vals"))
    enable_task_events = kwargs.get("enable_task_events")
    if enable_task_events is not None and not isinstance(enable_task_events, bool):
        raise TypeError(f"@ray.method(enable_task_events=...) must be True or False, got "
                        f"{enable_task_events!r}")
    retry = {key: check_method_option(key, kwargs[key])
             for key in ("retry_exceptions", "max_task_retries") if key in kwargs}
    concurrency_group = kwargs.get("concurrency_group")
    if concurrency_group is not None and not isinstance(concurrency_group, str):
        raise TypeError(f"@ray.method(concurrency_group=...) must name one of the actor's "
                        f"concurrency groups, got {concurrency_group!r}")

    def annotate(fn):
        if concurrency_group is not None:  # read by the actor's worker for each call
            fn.__ray_concurrency_group__ = concurrency_group
        if num_returns is not None:
            fn.__ray_num_returns__ = num_returns
        if enable_task_events is not None:
            fn.__ray_enable_task_events__ = enable_task_events
        if "retry_exceptions" in retry:  # the caller retries calls that raise these
            fn.__ray_retry_exceptions__ = retry["retry_exceptions"]
        if "max_task_retries" in retry:  # overrides the actor's max_task_retries
            fn.__ray_max_task_retries__ = retry["max_task_retries"]
        return fn

    if args and callable(args[0]) and not kwargs:
        return annotate(args[0])
    return annotate


def register_custom_serializer(cls, use_pickle=False, use_dict=False, serializer=None,
                               deserializer=None, local=False, job_id=None, class_id=None):
    """Tell ray how to serialize ``cls`` (0.7 API). ``local=False`` (0.7's default): the
    job's workers serialize it the same way (for functions and actor classes first used
    after this call); ``local=True``: this process only. ``job_id``/``class_id`` are 0.7's
    internal knobs and must be left unset."""
    from ray._private.runtime import custom_serializers

    if job_id is not None or class_id is not None:
        raise ValueError(
            "register_custom_serializer(job_id=..., class_id=...) are 0.7's internal "
            "arguments: leave them unset (the class is registered for this job).")
    custom_serializers.register(
        cls, use_pickle=use_pickle, use_dict=use_dict, serializer=serializer,
        deserializer=deserializer, shared=not local,
    )


def get_runtime_context():
    from ray.runtime_context import RuntimeContext

    return RuntimeContext(connected_runtime())
