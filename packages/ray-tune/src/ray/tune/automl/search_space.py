"""Finite search spaces for the genetic searcher (Ray 0.7's `ray.tune.automl` spelling).

Every parameter is a finite, ordered list of values, so a configuration is a *genome*:
one index per parameter. `DiscreteSpace` lists its values; `ContinuousSpace` samples an
interval at `num` points (evenly, or evenly in log space). `SearchSpace` orders the
parameters by name, so a genome means the same thing on every run.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from ray.tune.error import TuneError

LINEAR = "linear"
LOG = "log"


class ParameterSpace:
    """One named parameter with a finite tuple of `choices`; `ordered` says whether
    neighbouring choices are similar values (mutation then takes small steps)."""

    ordered = False

    def __init__(self, name: str, choices: Iterable):
        if not isinstance(name, str) or not name:
            raise TuneError(f"a search-space parameter needs a non-empty string name, got {name!r}")
        self.name = name
        self.choices = tuple(choices)
        if not self.choices:
            raise TuneError(f"search-space parameter {name!r} has no values; give at least one")

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and (self.name, self.choices) == (other.name, other.choices)

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.name, self.choices))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, {len(self.choices)} choices)"


class DiscreteSpace(ParameterSpace):
    """`DiscreteSpace("activation", ["relu", "tanh"])`: one of the listed values."""

    def __init__(self, name: str, values: Iterable):
        super().__init__(name, values)


class ContinuousSpace(ParameterSpace):
    """`ContinuousSpace("lr", 1e-4, 1e-1, 20, distribution="log")`: `num` points from
    `start` to `end` inclusive, spaced evenly (``"linear"``) or evenly in log space (``"log"``)."""

    ordered = True

    def __init__(self, name: str, start: float, end: float, num: int, distribution: str = LINEAR):
        if isinstance(num, bool) or not isinstance(num, int) or num < 2:
            raise TuneError(f"ContinuousSpace {name!r}: num must be an int >= 2, got {num!r}")
        if not start < end:
            raise TuneError(f"ContinuousSpace {name!r}: start ({start}) must be below end ({end})")
        if distribution not in (LINEAR, LOG):
            raise TuneError(f"ContinuousSpace {name!r}: distribution must be 'linear' or 'log', "
                            f"got {distribution!r}")
        if distribution == LOG and start <= 0:
            raise TuneError(f"ContinuousSpace {name!r}: a log distribution needs start > 0, got {start}")
        self.start, self.end, self.num, self.distribution = start, end, num, distribution
        super().__init__(name, _evenly_spaced(start, end, num, log=distribution == LOG))


def _evenly_spaced(start: float, end: float, num: int, *, log: bool) -> list[float]:
    lo, hi = (math.log(start), math.log(end)) if log else (start, end)
    step = (hi - lo) / (num - 1)
    inner = [lo + i * step for i in range(1, num - 1)]
    return [start, *(math.exp(p) for p in inner), end] if log else [start, *inner, end]


class SearchSpace:
    """The parameters a genetic search explores; a genome is one choice index per parameter."""

    def __init__(self, params: Iterable[ParameterSpace]):
        params = list(params)
        if not params:
            raise TuneError("SearchSpace needs at least one DiscreteSpace or ContinuousSpace")
        for param in params:
            if not isinstance(param, ParameterSpace):
                raise TuneError(f"SearchSpace takes DiscreteSpace/ContinuousSpace objects, got {param!r}")
        names = [p.name for p in params]
        duplicated = sorted({n for n in names if names.count(n) > 1})
        if duplicated:
            raise TuneError(f"SearchSpace names each parameter once; repeated: {duplicated}")
        self.params: tuple[ParameterSpace, ...] = tuple(sorted(params, key=lambda p: p.name))

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(len(p.choices) for p in self.params)

    def random_genome(self, rng) -> tuple[int, ...]:
        return tuple(int(rng.integers(size)) for size in self.sizes)

    def decode(self, genome: Sequence[int]) -> dict:
        """The config of a genome; a name with dots (``"optimizer.lr"``) becomes a nested key."""
        config: dict = {}
        for param, index in zip(self.params, genome):
            *parents, leaf = param.name.split(".")
            node = config
            for key in parents:
                node = node.setdefault(key, {})
            node[leaf] = param.choices[index]
        return config

    def __repr__(self) -> str:
        return f"SearchSpace({list(self.params)!r})"
