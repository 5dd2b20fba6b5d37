"""Tunable constants of the runtime, overridable with ``_internal_config`` JSON.

``ray.init(_internal_config='{"heartbeat_timeout_s": 1}')`` or the
``RAY_CONFIG_JSON`` environment variable (inherited by every process the node
starts) override any field; unknown keys are rejected with a suggestion.
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
    heartbeat_period_s: float = 0.5
    # A node silent for this long is marked dead by the monitor.
    heartbeat_timeout_s: float = 10.0
    worker_register_timeout_s: float = 30.0
    # Workers started (and kept idle) per node; None = num_cpus.
    num_prestart_workers: int | None = None
    max_idle_workers_factor: float = 2.0
    # After handling socket traffic, a driver's or worker's I/O thread polls this long
    # (yielding the CPU between polls) before it sleeps: on a VM a sleeping thread's
    # vCPU goes idle and waking it costs tens of microseconds, which dominated a
    # ray.get round trip. An idle process never spins. 0 turns it off.
    io_spin_us: int = 500
    # Task retries on worker death, default for @ray.remote functions.
    default_max_retries: int = 3
    # Bytes of the object store pre-faulted at start (makes the first big put fast).
    object_store_prefault_bytes: int = 1280 * 1024**2
    object_transfer_chunk_bytes: int = 8 * 1024**2
    # Store defaults: 30% of memory, capped like Ray's.
    object_store_memory_fraction: float = 0.3
    object_store_memory_cap_bytes: int = 20 * 1024**3
    gcs_connect_timeout_s: float = 10.0
    profiling_enabled: bool = True
    max_profile_events_buffered: int = 100_000
    task_events_flush_period_s: float = 0.2
    log_to_driver_poll_s: float = 0.1
    # Workers import functions/classes from their own copy of the code (by module and
    # name) instead of unpickling them from the GCS (ray.init/ray start --load-code-from-local).
    load_code_from_local: bool = False
    # runtime_env: the most bytes of files one working_dir or py_modules entry may
    # upload (Ray's limit, 500 MiB).
    runtime_env_max_package_bytes: int = 500 * 1024**2


_FIELDS = {f.name for f in dataclasses.fields(RayConfig)}


def build_config(overrides: str | dict | None = None) -> RayConfig:
    """Defaults, then ``RAY_CONFIG_JSON``, then ``overrides`` (JSON text or dict)."""
    merged: dict = {}
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
    return RayConfig(**merged)


def config_to_json(config: RayConfig) -> str:
    defaults = RayConfig()
    changed = {
        f.name: getattr(config, f.name)
        for f in dataclasses.fields(config)
        if getattr(config, f.name) != getattr(defaults, f.name)
    }
    return json.dumps(changed)
