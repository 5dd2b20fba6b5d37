"""Search-space primitives: grid axes, sampled values and escaped functions.

The Ray 0.7 spelling (`grid_search`, `sample_from`, `function`) and the Ray 2.x
helpers (`uniform`, `loguniform`, `choice`, `randint`, ...) are both accepted; the
2.x helpers are `sample_from` objects, so every searcher that understands one
understands the other.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import Any


class function:  # noqa: N801 - the public name is ray.tune.function
    """Escapes a literal function in a config so variant generation leaves it alone."""

    def __init__(self, func: Callable):
        self.func = func

    def __call__(self, *args, **kwargs):
        return self.func(*args, **kwargs)

    def __deepcopy__(self, memo):
        return self  # a function literal is shared, never copied

    def __repr__(self) -> str:
        return f"tune.function({self.func!r})"


class sample_from:  # noqa: N801 - the public name is ray.tune.sample_from
    """A value sampled at variant-generation time from `func(spec)`.

    `spec` is the partially resolved experiment spec, so `spec.config.alpha` gives
    conditional distributions.
    """

    def __init__(self, func: Callable[[Any], Any]):
        self.func = func

    def __repr__(self) -> str:
        return f"tune.sample_from({self.func!r})"


class Domain(sample_from):
    """A named distribution (`uniform`, `choice`, ...): samplable, and readable by searchers."""

    def __init__(self, kind: str, **params: Any):
        self.kind = kind
        self.params = params
        super().__init__(lambda _spec: self.sample(random))

    def sample(self, rng: random.Random | Any = random) -> Any:
        p = self.params
        q = p.get("q")
        if self.kind == "uniform":
            value = rng.uniform(p["lower"], p["upper"])
        elif self.kind == "loguniform":
            base = p.get("base", 10)
            lo, hi = math.log(p["lower"], base), math.log(p["upper"], base)
            value = base ** rng.uniform(lo, hi)
        elif self.kind == "randint":
            value = rng.randrange(p["lower"], p["upper"])
        elif self.kind == "lograndint":
            base = p.get("base", 10)
            lo, hi = math.log(p["lower"], base), math.log(p["upper"], base)
            value = int(base ** rng.uniform(lo, hi))
            value = min(max(value, p["lower"]), p["upper"] - 1)
        elif self.kind == "choice":
            return rng.choice(p["categories"])
        elif self.kind == "randn":
            value = rng.gauss(p["mean"], p["sd"])
        else:
            raise ValueError(f"unknown domain kind {self.kind!r}")
        if q is not None:
            value = round(value / q) * q
            if self.kind in ("randint", "lograndint"):
                value = int(value)
            if "lower" in p:  # quantizing must not leave the range
                value = min(max(value, p["lower"]), p["upper"])
        return value

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"tune.{self.kind}({args})"


def grid_search(values: Sequence[Any]) -> dict:
    """An axis of a grid: each value produces its own trial (grids multiply)."""
    return {"grid_search": list(values)}


def uniform(lower: float, upper: float) -> Domain:
    """A float drawn uniformly from [lower, upper)."""
    return Domain("uniform", lower=lower, upper=upper)


def quniform(lower: float, upper: float, q: float) -> Domain:
    """`uniform`, rounded to a multiple of `q`."""
    return Domain("uniform", lower=lower, upper=upper, q=q)


def loguniform(lower: float, upper: float, base: float = 10) -> Domain:
    """A float drawn uniformly in log space (`base` is the logarithm's base, as in Ray)."""
    if lower <= 0:
        raise ValueError(f"loguniform needs lower > 0, got {lower}")
    if upper <= lower:
        raise ValueError(f"loguniform needs upper > lower, got {lower}, {upper}")
    return Domain("loguniform", lower=lower, upper=upper, base=base)


def qloguniform(lower: float, upper: float, q: float, base: float = 10) -> Domain:
    if lower <= 0:
        raise ValueError(f"qloguniform needs lower > 0, got {lower}")
    return Domain("loguniform", lower=lower, upper=upper, base=base, q=q)


def randint(lower: int, upper: int) -> Domain:
    """An integer in [lower, upper)."""
    if upper <= lower:
        raise ValueError(f"randint needs upper > lower, got {lower}, {upper}")
    return Domain("randint", lower=lower, upper=upper)


def qrandint(lower: int, upper: int, q: int = 1) -> Domain:
    """An integer in [lower, upper] (inclusive, as in Ray), a multiple of `q`."""
    return Domain("randint", lower=lower, upper=upper + 1, q=q)


def lograndint(lower: int, upper: int, base: float = 10) -> Domain:
    """An integer in [lower, upper), drawn uniformly in log space."""
    if lower <= 0:
        raise ValueError(f"lograndint needs lower > 0, got {lower}")
    return Domain("lograndint", lower=lower, upper=upper, base=base)


def qlograndint(lower: int, upper: int, q: int, base: float = 10) -> Domain:
    if lower <= 0:
        raise ValueError(f"qlograndint needs lower > 0, got {lower}")
    return Domain("lograndint", lower=lower, upper=upper + 1, base=base, q=q)


def choice(categories: Sequence[Any]) -> Domain:
    categories = list(categories)
    if not categories:
        raise ValueError("choice needs at least one category")
    return Domain("choice", categories=categories)


def randn(mean: float = 0.0, sd: float = 1.0) -> Domain:
    return Domain("randn", mean=mean, sd=sd)


def qrandn(mean: float, sd: float, q: float) -> Domain:
    return Domain("randn", mean=mean, sd=sd, q=q)
