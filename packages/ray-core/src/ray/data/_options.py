"""Keyword checks shared by ``Dataset`` and ``GroupedData``: the options of map-like
calls (ours by name, the rest ray task options), seeds, counts."""

from __future__ import annotations

import os

from ray.data._plan import ActorPoolStrategy


def check_positive(value, name: str) -> None:
    if not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")


def check_prefetch(value) -> int:
    if not isinstance(value, int) or value < 0:
        raise ValueError(f"prefetch_batches must be a non-negative int, got {value!r}")
    return value


def seed_of(seed: int | None) -> int:
    if seed is None:
        return int.from_bytes(os.urandom(4), "little")
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int or None, got {seed!r}")
    return seed


FN_OPTIONS = ("fn_args", "fn_kwargs", "fn_constructor_args", "fn_constructor_kwargs",
               "compute", "concurrency")


def split_options(options: dict) -> dict:
    """map/filter/flat_map/map_batches keywords: ours by name, the rest ray task options."""
    ours = {k: options.pop(k) for k in FN_OPTIONS if k in options}
    return {**ours, "ray_remote_args": options}


def remote_args(args: dict) -> dict:
    return {k: v for k, v in args.items() if v is not None}


def task_limit(concurrency) -> int | None:
    if concurrency is None:
        return None
    if isinstance(concurrency, tuple):
        concurrency = concurrency[-1]
    if not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a positive int, got {concurrency!r}")
    return concurrency


def actor_count(concurrency, compute, cls, what: str) -> int:
    if compute == "tasks":
        raise ValueError(f"{what} with a callable class ({cls.__qualname__}) runs in actors, not compute='tasks'")
    size = compute.num_actors() if isinstance(compute, ActorPoolStrategy) else None
    count = task_limit(concurrency) or size
    if count is None:
        raise ValueError(
            f"{what} with a callable class ({cls.__qualname__}) runs it in actors: "
            "pass concurrency=N (the number of actors)"
        )
    return count
