"""Expand a config with grid axes and sampled values into concrete variants.

`generate_variants(spec)` yields `(resolved_vars, resolved_spec)` pairs: one per point
of the cartesian product of every `grid_search` axis, with `sample_from` values drawn
after the grid values they may depend on (`spec.config.alpha`).
"""

from __future__ import annotations

import copy
import logging
import random
import types
from collections.abc import Iterator
from typing import Any

from ray.tune.error import TuneError
from ray.tune.sample import function, sample_from

Path = tuple
logger = logging.getLogger(__name__)
_warned_lambda: list = []


def generate_variants(unresolved_spec: dict) -> Iterator[tuple[dict, dict]]:
    """Yields (resolved_vars, spec) for every variant of `unresolved_spec`."""
    yield from _generate_variants(unresolved_spec)


def grid_search_axes(spec: dict) -> list[tuple[Path, list]]:
    return [(path, value["grid_search"]) for path, value in _walk(spec) if _is_grid(value)]


def format_vars(resolved_vars: dict) -> str:
    """Short `a=1,b=2` tag for a trial name; only the last path element is kept."""
    out = []
    for path, value in sorted(resolved_vars.items()):
        if path[0] in ("run", "env", "resources_per_trial"):
            continue
        last = path[-1]
        if isinstance(last, int):  # a list index: use the enclosing key as well
            last = "_".join(str(p) for p in path[-2:]) if len(path) > 1 else str(last)
        out.append(f"{last}={_clean(value)}")
    return ",".join(out)


def flatten_resolved_vars(resolved_vars: dict) -> dict:
    return {"/".join(str(p) for p in path): v for path, v in resolved_vars.items()}


def has_unresolved_values(spec: Any) -> bool:
    return any(True for _ in _unresolved(spec))


class _RecursiveDependencyError(Exception):
    pass


class _UnresolvedAccessGuard(dict):
    """Lets `spec.config.alpha` read resolved values and fail on unresolved ones."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.__dict__ = self

    def __getattribute__(self, item):
        value = dict.__getattribute__(self, item)
        if not _is_resolved(value):
            raise _RecursiveDependencyError(f"`{item}` recursively depends on {value}")
        if isinstance(value, dict):
            return _UnresolvedAccessGuard(value)
        return value


def _clean(value: Any) -> str:
    if isinstance(value, float):
        text = f"{value:.5g}"
    else:
        text = str(value)
    return text.replace("/", "_")


def _is_grid(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and "grid_search" in value


def _is_resolved(value: Any) -> bool:
    """Shallow: only the value itself, so `spec.config` is readable while it has samplers."""
    return not (isinstance(value, sample_from) and not isinstance(value, function)) and not _is_grid(
        value
    )


def _is_bare_lambda(value: Any) -> bool:
    """Ray 0.6/0.7 configs used bare `lambda spec: ...` for sampled values."""
    return isinstance(value, types.LambdaType) and value.__name__ == "<lambda>"


def _as_sampler(value: Any) -> Any:
    if _is_bare_lambda(value):
        if not _warned_lambda:
            logger.warning(
                "A bare lambda in a Tune config is sampled, as in Ray 0.7; wrap it in "
                "tune.sample_from(...) to say so, or tune.function(...) to pass it as a value"
            )
            _warned_lambda.append(True)
        return sample_from(value)
    return value


def _walk(spec: Any, prefix: Path = ()) -> Iterator[tuple[Path, Any]]:
    if isinstance(spec, dict):
        for key, value in spec.items():
            value = _as_sampler(value)
            if _is_grid(value) or isinstance(value, sample_from):
                yield prefix + (key,), value
            elif isinstance(value, (dict, list)):
                yield from _walk(value, prefix + (key,))
    elif isinstance(spec, list):
        for index, value in enumerate(spec):
            value = _as_sampler(value)
            if _is_grid(value) or isinstance(value, sample_from):
                yield prefix + (index,), value
            elif isinstance(value, (dict, list)):
                yield from _walk(value, prefix + (index,))


def _unresolved(spec: Any) -> Iterator[tuple[Path, Any]]:
    for path, value in _walk(spec):
        if isinstance(value, function):
            continue
        yield path, value


def _assign(spec: Any, path: Path, value: Any) -> None:
    for key in path[:-1]:
        spec = spec[key]
    spec[path[-1]] = value


def _lookup(spec: Any, path: Path) -> Any:
    for key in path:
        spec = spec[key]
    return spec


def _generate_variants(spec: dict) -> Iterator[tuple[dict, dict]]:
    spec = copy.deepcopy(spec)
    unresolved = list(_unresolved(spec))
    if not unresolved:
        yield {}, spec
        return

    grid_vars = []
    lambda_vars = []
    for path, value in unresolved:
        if _is_grid(value):
            grid_vars.append((path, value["grid_search"]))
        else:
            lambda_vars.append((path, value))
    for path, values in grid_vars:
        if not values:
            raise TuneError(f"grid_search at {'/'.join(map(str, path))} has no values")

    for resolved_vars, resolved_spec in _grid_product(spec, grid_vars):
        resolved_spec = copy.deepcopy(resolved_spec)
        sampled = _resolve_lambdas(resolved_spec, lambda_vars)
        resolved_vars = {**resolved_vars, **sampled}
        # A sampled value may itself contain grid axes or samplers: expand those too.
        for inner_vars, inner_spec in _generate_variants(resolved_spec):
            yield {**resolved_vars, **inner_vars}, inner_spec


def _grid_product(spec: dict, grid_vars: list) -> Iterator[tuple[dict, dict]]:
    if not grid_vars:
        yield {}, spec
        return
    (path, values), rest = grid_vars[0], grid_vars[1:]
    for value in values:
        spec_copy = copy.deepcopy(spec)
        _assign(spec_copy, path, value)
        for inner_vars, inner_spec in _grid_product(spec_copy, rest):
            yield {path: value, **inner_vars}, inner_spec


def _resolve_lambdas(spec: dict, lambda_vars: list) -> dict:
    resolved = {}
    pending = list(lambda_vars)
    # A lambda may depend on another one: retry until no progress is made.
    while pending:
        still_pending = []
        for path, sampler in pending:
            try:
                value = sampler.func(_UnresolvedAccessGuard(spec))
            except _RecursiveDependencyError:
                still_pending.append((path, sampler))
                continue
            except (AttributeError, KeyError, TypeError):
                if has_unresolved_values(spec):
                    still_pending.append((path, sampler))
                    continue
                raise
            _assign(spec, path, value)
            resolved[path] = value
        if len(still_pending) == len(pending):
            names = ", ".join("/".join(map(str, p)) for p, _ in still_pending)
            raise TuneError(f"could not resolve the sampled values {names}: circular dependency?")
        pending = still_pending
    return resolved


def sample_domain(value: Any, rng: random.Random) -> Any:
    """Samples a single `sample_from` (used by searchers that only need one value)."""
    if hasattr(value, "sample"):
        return value.sample(rng)
    return value.func(None)
