"""``ray.data.aggregate``: aggregations for ``Dataset.aggregate`` and ``GroupedData``.

    from ray.data.aggregate import AggregateFn, Count, Mean, Std

    ds.aggregate(Count(), Mean("x"), Std("x", ddof=0))
    # {"count()": 100, "mean(x)": 49.5, "std(x)": 28.86...}
    ds.groupby("k").aggregate(AggregateFn(
        init=lambda key: 1, accumulate_row=lambda acc, row: acc * row["x"],
        merge=lambda a, b: a * b, name="prod(x)"))

Every aggregation is an accumulator (the model of Ray's ``AggregateFn``):
``init(key)`` makes an empty one per group, ``accumulate_row`` (or the vectorized
``accumulate_block``) folds rows in, ``merge`` joins the accumulators of two parts of
the data, ``finalize`` turns the last one into the result. The built-ins (``Count``,
``Sum``, ``Min``, ``Max``, ``Mean``, ``Std``) fold a whole numpy column at a time.
Nulls (None, NaN, NaT) are skipped with ``ignore_nulls=True`` (the default); with
``ignore_nulls=False`` one null makes the result None. A result over no values is None.
``Std`` merges (count, mean, M2) triples (Chan et al.), so it needs one pass.

Pure objects, no ray: they travel to the tasks in ``ray.data._tasks`` with cloudpickle.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ray.data import _blocks

__all__ = ["AggregateFn", "Count", "Max", "Mean", "Min", "Std", "Sum"]


class AggregateFn:
    """A user-defined aggregation (exactly one of ``accumulate_row`` and
    ``accumulate_block`` is given; ``accumulate_block`` gets the group's rows as a
    pandas DataFrame, or a list of dict rows where pandas is absent)."""

    def __init__(
        self,
        init: Callable[[Any], Any],
        merge: Callable[[Any, Any], Any],
        accumulate_row: Callable[[Any, dict], Any] | None = None,
        accumulate_block: Callable[[Any, Any], Any] | None = None,
        finalize: Callable[[Any], Any] | None = None,
        name: str | None = None,
        *,
        accumulate: Callable[[Any, dict], Any] | None = None,
    ):
        if accumulate is not None:  # Ray 1.x's name for accumulate_row
            if accumulate_row is not None:
                raise ValueError("give accumulate_row or its old name accumulate, not both")
            accumulate_row = accumulate
        if (accumulate_row is None) == (accumulate_block is None):
            raise ValueError(
                "AggregateFn needs exactly one of accumulate_row (acc, row -> acc) and "
                "accumulate_block (acc, block -> acc)"
            )
        for what, fn in (("init", init), ("merge", merge), ("finalize", finalize)):
            if fn is not None and not callable(fn):
                raise TypeError(f"AggregateFn {what} must be callable, got {type(fn).__name__}")
        self.init = init
        self.merge = merge
        self.accumulate_row = accumulate_row
        self.accumulate_block = accumulate_block
        self.finalize = finalize if finalize is not None else _identity
        self.name = name if name is not None else "AggregateFn"

    def accumulate_group(self, acc, group: _blocks.Group):
        """Fold the rows of ``group`` into ``acc``."""
        if self.accumulate_block is not None:
            return self.accumulate_block(acc, group.block())
        for row in group.rows():
            acc = self.accumulate_row(acc, row)
        return acc

    def accumulate_runs(self, groups: list[_blocks.Group], keys: list) -> list:
        """One accumulator per group; the groups are consecutive runs of one block."""
        return [self.accumulate_group(self.init(key), group) for group, key in zip(groups, keys)]

    def columns(self) -> list:
        """The columns this aggregation reads (checked against the dataset first)."""
        return []

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def _identity(acc):
    return acc


class _ColumnAggregate(AggregateFn):
    """A built-in over one column: ``on``, ``ignore_nulls``, named ``kind(on)``.

    The accumulator is a tuple whose first item says whether a null was seen."""

    kind = ""
    numeric = True  # Sum/Mean/Std need numbers; Min/Max take anything comparable
    # (values, nulls, starts, counts, saw_null) -> one accumulator per run; None: fold
    # group by group instead
    _of_runs: Callable | None = None

    def __init__(self, on: str | None = None, ignore_nulls: bool = True, alias_name: str | None = None):
        if on is None and type(self) is not Count:
            raise ValueError(f"{type(self).__name__} needs a column: {type(self).__name__}(on='column')")
        self.on = on
        self.ignore_nulls = ignore_nulls
        self.name = alias_name or f"{self.kind}({on if on is not None else ''})"
        self.accumulate_row = self.accumulate_block = None
        self.merge = self._merge

    def columns(self) -> list:
        return [self.on] if self.on is not None else []

    def init(self, key):
        return self._empty()

    def accumulate_group(self, acc, group: _blocks.Group):
        values = group.column(self.on)
        nulls = _blocks.null_mask(values)
        present = values[~nulls] if nulls.any() else values
        if self.numeric and len(present):
            present = _as_numeric(present, self.on)
        return self._merge(acc, self._of_values(bool(nulls.any()), present))

    def accumulate_runs(self, groups: list[_blocks.Group], keys: list) -> list:
        # A numeric column folds every run at once with numpy's reduceat (one call per
        # block, not one per group): a groupby with many small groups stays fast.
        if not groups or self.on is None or self._of_runs is None:
            return super().accumulate_runs(groups, keys)
        first, last = groups[0], groups[-1]
        values = first.block_column(self.on)[first.start:last.end]
        if values.dtype.kind not in "biuf":
            return super().accumulate_runs(groups, keys)
        if values.dtype.kind == "b":
            values = values.astype(np.int64)
        starts = np.fromiter((g.start - first.start for g in groups), dtype=np.int64, count=len(groups))
        nulls = _blocks.null_mask(values)
        counts = np.add.reduceat(~nulls, starts)
        saw_null = np.logical_or.reduceat(nulls, starts)
        return self._of_runs(values, nulls, starts, counts, saw_null)

    def finalize(self, acc):
        saw_null = acc[0]
        if saw_null and not self.ignore_nulls:
            return None
        return self._result(acc)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(on={self.on!r}, ignore_nulls={self.ignore_nulls})"


def _as_numeric(values: np.ndarray, column) -> np.ndarray:
    if values.dtype.kind in "biufc" or all(isinstance(v, (int, float, np.number)) for v in values):
        return values
    kinds = sorted({type(v).__name__ for v in values})
    raise TypeError(
        f"column {column!r} is not numeric (it holds {', '.join(kinds)}); sum/mean/std need "
        "numbers: cast the column first (map_batches) or aggregate another column"
    )


class Count(_ColumnAggregate):
    """Rows (``on=None``), or the rows of column ``on`` (non-null ones with
    ``ignore_nulls=True``). Named ``count()`` / ``count(on)``."""

    kind = "count"

    def __init__(self, on: str | None = None, ignore_nulls: bool = False, alias_name: str | None = None):
        super().__init__(on, ignore_nulls, alias_name)

    def _empty(self):
        return (False, 0)

    def accumulate_group(self, acc, group: _blocks.Group):
        if self.on is None or not self.ignore_nulls:
            return (False, acc[1] + group.num_rows)
        return (False, acc[1] + int((~_blocks.null_mask(group.column(self.on))).sum()))

    def _merge(self, a, b):
        return (False, a[1] + b[1])

    def _result(self, acc):
        return acc[1]


class Sum(_ColumnAggregate):
    """Sum of column ``on`` (named ``sum(on)``)."""

    kind = "sum"

    def _empty(self):
        return (False, 0, 0)

    def _of_values(self, saw_null, values):
        return (saw_null, len(values), _blocks.python_scalar(values.sum()) if len(values) else 0)

    def _of_runs(self, values, nulls, starts, counts, saw_null):
        sums = np.add.reduceat(np.where(nulls, 0, values), starts)
        return list(zip(saw_null.tolist(), counts.tolist(), sums.tolist()))

    def _merge(self, a, b):
        return (a[0] or b[0], a[1] + b[1], a[2] + b[2])

    def _result(self, acc):
        return acc[2] if acc[1] else None


class Mean(Sum):
    """Mean of column ``on`` (named ``mean(on)``)."""

    kind = "mean"

    def _result(self, acc):
        return acc[2] / acc[1] if acc[1] else None


class _Extreme(_ColumnAggregate):
    numeric = False
    pick: Callable = min

    def _empty(self):
        return (False, None)

    def _of_values(self, saw_null, values):
        if not len(values):
            return (saw_null, None)
        if values.dtype.kind in "biufmM":
            return (saw_null, _blocks.python_scalar(values.min() if self.pick is min else values.max()))
        return (saw_null, _blocks.python_scalar(self._compare(values.tolist())))

    def _of_runs(self, values, nulls, starts, counts, saw_null):
        if values.dtype.kind == "f":
            values = np.where(nulls, np.inf if self.pick is min else -np.inf, values)
        picked = (np.minimum if self.pick is min else np.maximum).reduceat(values, starts)
        return [(n, v if c else None) for n, c, v in zip(saw_null.tolist(), counts.tolist(), picked.tolist())]

    def _compare(self, values: list):
        try:
            return self.pick(values)
        except TypeError:
            kinds = sorted({type(v).__name__ for v in values})
            raise TypeError(
                f"{self.kind}({self.on}): the values of column {self.on!r} cannot be compared "
                f"(it holds {', '.join(kinds)}); make the column one type first"
            ) from None

    def _merge(self, a, b):
        present = [v for v in (a[1], b[1]) if v is not None]
        return (a[0] or b[0], self._compare(present) if present else None)

    def _result(self, acc):
        return acc[1]


class Min(_Extreme):
    """Smallest value of column ``on`` (named ``min(on)``)."""

    kind = "min"
    pick = staticmethod(min)


class Max(_Extreme):
    """Largest value of column ``on`` (named ``max(on)``)."""

    kind = "max"
    pick = staticmethod(max)


class Std(_ColumnAggregate):
    """Standard deviation of column ``on`` with divisor ``N - ddof`` (named ``std(on)``).
    Fewer than ``ddof + 1`` values give 0.0, as in Ray; no values give None."""

    kind = "std"

    def __init__(self, on: str | None = None, ddof: int = 1, ignore_nulls: bool = True,
                 alias_name: str | None = None):
        super().__init__(on, ignore_nulls, alias_name)
        if not isinstance(ddof, int) or ddof < 0:
            raise ValueError(f"ddof must be a non-negative int, got {ddof!r}")
        self.ddof = ddof

    def _empty(self):
        return (False, 0, 0.0, 0.0)

    def _of_values(self, saw_null, values):
        if not len(values):
            return (saw_null, 0, 0.0, 0.0)
        values = values.astype(float)
        mean = float(values.mean())
        return (saw_null, len(values), mean, float(((values - mean) ** 2).sum()))

    def _of_runs(self, values, nulls, starts, counts, saw_null):
        values = np.where(nulls, 0.0, values.astype(float))
        means = np.add.reduceat(values, starts) / np.maximum(counts, 1)
        lengths = np.diff(np.append(starts, len(values)))
        deviations = np.where(nulls, 0.0, values - np.repeat(means, lengths))
        m2 = np.add.reduceat(deviations**2, starts)
        return list(zip(saw_null.tolist(), counts.tolist(), means.tolist(), m2.tolist()))

    def _merge(self, a, b):
        count = a[1] + b[1]
        if not a[1] or not b[1]:
            return (a[0] or b[0], *(a[1:] if a[1] else b[1:]))
        delta = b[2] - a[2]
        mean = a[2] + delta * b[1] / count
        m2 = a[3] + b[3] + delta * delta * a[1] * b[1] / count
        return (a[0] or b[0], count, mean, m2)

    def _result(self, acc):
        count, m2 = acc[1], acc[3]
        if not count:
            return None
        if count - self.ddof <= 0:
            return 0.0
        return math.sqrt(m2 / (count - self.ddof))
