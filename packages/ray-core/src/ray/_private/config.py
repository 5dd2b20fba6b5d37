"""Tunable constants of the runtime, overridable with ``_internal_config`` JSON.

``ray.init(_internal_config='{"heartbeat_timeout_s": 1}')`` (or ``_system_config``,
Ray 1.x+'s name), the ``RAY_CONFIG_JSON`` environment variable (inherited by every
process the node starts) and, as in Ray, one ``RAY_<field>`` environment variable per
field (``RAY_memory_usage_threshold=0.9``) override any field; unknown keys are rejected
with a suggestion. Precedence: defaults < ``RAY_<field>`` < ``RAY_CONFIG_JSON`` < the
overrides passed in.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os


@dataclasses.dataclass(frozen=True)
class RayConfig:
    # Values up to this size travel inline in messages instead of the object store.
    max_inline_bytes: int = 100 * 1024
    # An idle leased worker goes back to its raylet after this long.
    idle_lease_timeout_s: float = 0.5
    # Tasks in flight to one leased worker, for tasks that finish quickly.
    max_tasks_in_flight_per_worker: int = 64
    # Aim to keep at most this much queued work per worker (decides pipelining depth).
    pipeline_target_s: float = 0.002
    # Lease requests an owner keeps outstanding per resource shape.
    max_pending_lease_requests: int = 8
    # More lease requests a task queue may have in flight while spillbacks report free
    # room for its shape on other nodes (at most this many more).
    max_lease_requests_for_room: int = 256
    heartbeat_period_s: float = 0.5
    # A node silent for this long is marked dead by the monitor.
    heartbeat_timeout_s: float = 10.0
    worker_register_timeout_s: float = 30.0
    # Workers started (and kept idle) per node; None = num_cpus.
    num_prestart_workers: int | None = None
    max_idle_workers_factor: float = 2.0
    # A thread that borrows the I/O loop (ray.get, a worker waiting for its next task)
    # polls this long (yielding the CPU between polls) at the start of each wait and
    # after each message it handled, before it sleeps: on a VM a sleeping thread's vCPU
    # goes idle and waking it costs tens of microseconds, paid inside the sender's
    # send(), which dominated a ray.get round trip. The I/O thread itself never spins.
    # An idle process never spins. 0 turns it off.
    io_spin_us: int = 500
    # Drivers and workers freeze the heap they have once connected (gc.freeze; a driver
    # collects first): full collections then skip it (ray._private.gc_tuning).
    gc_freeze_startup_heap: bool = True
    # Task retries on worker death, default for @ray.remote functions.
    default_max_retries: int = 3
    # Bytes of the object store pre-faulted at start (makes the first big put fast).
    object_store_prefault_bytes: int = 1280 * 1024**2
    object_transfer_chunk_bytes: int = 8 * 1024**2
    # Store defaults: 30% of memory, capped like Ray's.
    object_store_memory_fraction: float = 0.3
    object_store_memory_cap_bytes: int = 20 * 1024**3
    gcs_connect_timeout_s: float = 10.0
    # Workers' glibc malloc: blocks up to this many bytes come from the heap, and up to
    # the trim threshold of freed heap stays mapped for the next task (0: glibc's
    # defaults); see ray._private.workers.malloc_tuning (page faults under a hypervisor).
    worker_malloc_mmap_threshold_bytes: int = 32 * 1024**2
    worker_malloc_trim_threshold_bytes: int = 128 * 1024**2
    # An actor whose owner pickled a handle to it (a task argument, a return value) is
    # not ended for lack of handles within this long of that (ray._private.runtime.
    # actor_scope: the reader of the copy registers as a borrower meanwhile).
    actor_handle_transit_grace_s: float = 10.0
    profiling_enabled: bool = True
    max_profile_events_buffered: int = 100_000
    task_events_flush_period_s: float = 0.2
    # Task events (state transitions behind ray.util.state.list_tasks and the dashboard's
    # task pages; ray._private.task_events): on/off, the most a process buffers between
    # flushes, and the most the GCS keeps (the newest; about two per task).
    task_events_enabled: bool = True
    task_events_max_buffered: int = 100_000
    task_events_max_in_gcs: int = 200_000
    # Ray's RAY_record_task_actor_creation_sites: the owner keeps the stack of each
    # .remote() call in its submitted event (the state API's call_site; off by default).
    record_task_actor_creation_sites: bool = False
    log_to_driver_poll_s: float = 0.1
    # Workers import functions/classes from their own copy of the code (by module and
    # name) instead of unpickling them from the GCS (ray.init/ray start --load-code-from-local).
    load_code_from_local: bool = False
    # runtime_env: the most bytes of files one working_dir or py_modules entry may
    # upload (Ray's limit, 500 MiB).
    runtime_env_max_package_bytes: int = 500 * 1024**2

    # --- object spilling (Ray's names; see raylet/spilling.py) ---
    # Spill primary copies to disk instead of failing when the store fills.
    automatic_object_spilling_enabled: bool = True
    # Ray's JSON: {"type": "filesystem", "params": {"directory_path": "/path" | [...],
    # "buffer_size": N}}; "" = the session directory.
    object_spilling_config: str = ""
    # Shorthand for a filesystem config with this directory (wins over the config).
    object_spilling_directory: str = ""
    # Spill once primary copies take more than this fraction of the store.
    object_spilling_threshold: float = 0.8
    # Fuse objects into files of at least this many bytes (unless fewer are spillable).
    min_spilling_size: int = 100 * 1024**2
    max_fused_object_count: int = 2000
    # Threads that write and read spill files (off the raylet's event loop).
    max_io_workers: int = 4
    # A create that cannot fit even after spilling everything spillable waits this long
    # for memory to be released before it raises ObjectStoreFullError.
    oom_grace_period_s: float = 2.0

    # --- memory monitor (Ray's names; see raylet/memory_monitor.py) ---
    # Kill a worker when the node's memory use exceeds this fraction of its total.
    memory_usage_threshold: float = 0.95
    # How often the raylet reads the node's memory use; 0 turns the monitor off.
    memory_monitor_refresh_ms: int = 250
    # With >= 0: also require less than this many bytes free before killing.
    min_memory_free_bytes: int = -1
    # Retries of a task killed by the memory monitor, counted apart from max_retries (as
    # Ray): -1 retries for ever; a task submitted with max_retries=0 is never retried.
    task_oom_retries: int = -1
    # Before the n-th retry after an OOM kill wait min(base * 2**n, 60 s); 0: no wait.
    task_oom_retry_delay_base_ms: int = 1000

    def __post_init__(self) -> None:
        for name in ("object_spilling_threshold", "memory_usage_threshold"):
            value = getattr(self, name)
            if not 0.0 < value <= 1.0:
                raise ValueError(f"{name} must be a fraction in (0, 1], got {value!r}")
        if self.task_oom_retries < -1:
            raise ValueError(f"task_oom_retries must be -1 (no limit) or >= 0, got "
                             f"{self.task_oom_retries!r}")
        for name in ("min_spilling_size", "memory_monitor_refresh_ms",
                     "task_oom_retry_delay_base_ms"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        for name in ("max_io_workers", "max_fused_object_count"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)!r}")
        parse_spilling_config(self.object_spilling_config)  # bad JSON fails at ray.init


def parse_spilling_config(text: str) -> tuple[tuple[str, ...], int]:
    """Ray's ``object_spilling_config`` JSON -> (directories, buffer size).

    ``""`` gives no directories: the raylet then spills into the session directory,
    as Ray does by default.
    """
    if not text:
        return (), -1
    try:
        config = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"object_spilling_config is not valid JSON ({exc}): {text!r}") from None
    if not isinstance(config, dict) or "type" not in config:
        raise ValueError(
            'object_spilling_config must be a JSON object like {"type": "filesystem", '
            f'"params": {{"directory_path": "/tmp/spill"}}}}, got {text!r}'
        )
    unknown = set(config) - {"type", "params"}
    if unknown:
        raise ValueError(f"object_spilling_config has unknown keys {sorted(unknown)}; "
                         "it takes 'type' and 'params'")
    if config["type"] != "filesystem":
        raise ValueError(
            f"object_spilling_config type {config['type']!r} is not supported: only "
            "'filesystem' is (spill to a mounted network filesystem's directory to "
            "spill off the machine)"
        )
    params = config.get("params") or {}
    unknown = set(params) - {"directory_path", "buffer_size"}
    if unknown:
        raise ValueError(f"object_spilling_config params {sorted(unknown)} are not "
                         "supported; the filesystem type takes directory_path and buffer_size")
    paths = params.get("directory_path")
    if isinstance(paths, str):
        paths = [paths]
    if not paths or not isinstance(paths, list) or not all(
        isinstance(p, str) and p for p in paths
    ):
        raise ValueError("object_spilling_config params.directory_path must be a directory "
                         f"or a non-empty list of directories, got {paths!r}")
    buffer_size = params.get("buffer_size", -1)
    if buffer_size is None:
        buffer_size = -1
    if isinstance(buffer_size, bool) or not isinstance(buffer_size, int):
        raise ValueError(f"object_spilling_config params.buffer_size must be an integer "
                         f"number of bytes, got {buffer_size!r}")
    return tuple(paths), buffer_size


_FIELDS = {f.name for f in dataclasses.fields(RayConfig)}


def _from_env(field: dataclasses.Field, text: str):
    """A ``RAY_<field>`` value, parsed by the field's type (as Ray's RayConfig does)."""
    kind = field.type if isinstance(field.type, str) else getattr(field.type, "__name__", "")
    try:
        if kind.startswith("bool"):
            lowered = text.strip().lower()
            if lowered not in ("1", "0", "true", "false"):
                raise ValueError(text)
            return lowered in ("1", "true")
        if kind.startswith("int"):
            return None if text.strip().lower() == "none" else int(text)
        if kind.startswith("float"):
            return float(text)
    except ValueError:
        raise ValueError(
            f"environment variable RAY_{field.name}={text!r} is not a valid {kind}"
        ) from None
    return text


def _normalize(merged: dict) -> dict:
    spilling = merged.get("object_spilling_config")
    if isinstance(spilling, dict):  # accepted as a dict too; stored as Ray's JSON text
        merged["object_spilling_config"] = json.dumps(spilling)
    return merged


def build_config(overrides: str | dict | None = None) -> RayConfig:
    """Defaults, ``RAY_<field>`` variables, ``RAY_CONFIG_JSON``, then ``overrides``."""
    merged: dict = {}
    for field in dataclasses.fields(RayConfig):
        text = os.environ.get(f"RAY_{field.name}")
        if text is not None:
            merged[field.name] = _from_env(field, text)
    env = os.environ.get("RAY_CONFIG_JSON")
    if env:
        merged.update(json.loads(env))
    if overrides:
        merged.update(json.loads(overrides) if isinstance(overrides, str) else overrides)
    for key in merged:
        if key not in _FIELDS:
            hint = difflib.get_close_matches(key, _FIELDS, n=1)
            raise ValueError(
                f"Unknown _internal_config key {key!r}"
                + (f"; did you mean {hint[0]!r}?" if hint else ".")
            )
    return RayConfig(**_normalize(merged))


def with_spilling_directory(config: RayConfig, directory) -> RayConfig:
    """``config`` spilling into ``directory`` (``ray.init(object_spilling_directory=)``,
    ``ray start --object-spilling-directory``; Ray 2.x's stable spelling, which wins over
    ``object_spilling_config``)."""
    if not isinstance(directory, str) or not directory:
        raise ValueError(f"object_spilling_directory must be a directory path, got {directory!r}")
    if not config.automatic_object_spilling_enabled:
        raise ValueError("object_spilling_directory was given but automatic_object_spilling_"
                         "enabled is off: turn spilling on, or leave the directory out")
    return dataclasses.replace(config, object_spilling_directory=directory)


def config_to_json(config: RayConfig) -> str:
    defaults = RayConfig()
    changed = {
        f.name: getattr(config, f.name)
        for f in dataclasses.fields(config)
        if getattr(config, f.name) != getattr(defaults, f.name)
    }
    return json.dumps(changed)
