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
        if self.kind == "uniform":
            return rng.uniform(p["lower"], p["upper"])
        if self.kind == "loguniform":
            lo, hi = math.log(p["lower"]), math.log(p["upper"])
            return math.exp(rng.uniform(lo, hi))
        if self.kind == "randint":
            return rng.randrange(p["lower"], p["upper"])
        if self.kind == "choice":
            return rng.choice(p["categories"])
        if self.kind == "randn":
            return rng.gauss(p["mean"], p["sd"])
        raise ValueError(f"unknown domain kind {self.kind!r}")

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"tune.{self.kind}({args})"


def grid_search(values: Sequence[Any]) -> dict:
    """An axis of a grid: each value produces its own trial (grids multiply)."""
    return {"grid_search": list(values)}


def uniform(lower: float, upper: float) -> Domain:
    return Domain("uniform", lower=lower, upper=upper)


def loguniform(lower: float, upper: float) -> Domain:
    if lower <= 0:
        raise ValueError(f"loguniform needs lower > 0, got {lower}")
    return Domain("loguniform", lower=lower, upper=upper)


def randint(lower: int, upper: int) -> Domain:
    """An integer in [lower, upper)."""
    return Domain("randint", lower=lower, upper=upper)


def choice(categories: Sequence[Any]) -> Domain:
    return Domain("choice", categories=list(categories))


def randn(mean: float = 0.0, sd: float = 1.0) -> Domain:
    return Domain("randn", mean=mean, sd=sd)
