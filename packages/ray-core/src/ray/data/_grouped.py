"""``GroupedData``: what ``Dataset.groupby(key)`` returns.

``aggregate`` (and ``count``/``sum``/...) is one all-to-all operator
(``_shuffle.GroupbyAggregate``): built-in aggregations reduce every block to one row
per key with Arrow's hash aggregation and merge those partials per key range
(``_arrow_groupby``); other aggregations range-partition the rows by key (a sort:
equal keys always land in the same block) and fold each sorted block run by run
(``AggregateGroups``). ``map_groups`` is that sort followed by the user's function
on every run of equal keys (``MapGroups``), in tasks or actors. The output is ordered
by key, as Ray's is. ``key=None`` puts every row in one group.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ray.data import _blocks, _sort
from ray.data._arrow_groupby import expected_columns
from ray.data._options import split_options
from ray.data._shuffle import GroupbyAggregate, Sort
from ray.data._transforms import MapGroups
from ray.data.aggregate import AggregateFn, Count, Max, Mean, Min, Std, Sum

if TYPE_CHECKING:
    from ray.data.dataset import Dataset


class GroupedData:
    """Rows grouped by the values of ``key`` (a column, a list of them, or None)."""

    def __init__(self, dataset: Dataset, key, *, num_partitions: int | None = None):
        if key is not None:
            sort_key = _sort.SortKey.of(key)
            sort_key.check_columns(_known_columns(dataset), "groupby")
            self._columns = sort_key.columns
        else:
            self._columns = ()
        if num_partitions is not None and (not isinstance(num_partitions, int) or num_partitions < 1):
            raise ValueError(f"num_partitions must be a positive int or None, got {num_partitions!r}")
        self._dataset = dataset
        self._key = key
        self._num_partitions = num_partitions

    def __repr__(self) -> str:
        return f"GroupedData(key={self._key!r}, dataset={self._dataset!r})"

    def aggregate(self, *aggs: AggregateFn) -> Dataset:
        """One row per group: the key column(s), then one column per aggregation
        (named by ``agg.name``)."""
        from ray.data.dataset import from_blocks

        aggs = self._dataset._checked_aggs(aggs)
        if not self._columns:
            return from_blocks([_blocks.build_block([self._dataset.aggregate(*aggs)])])
        run = GroupbyAggregate(self._columns, tuple(aggs), self._num_partitions)
        return self._dataset._all_to_all(run, "Aggregate", columns_after=lambda _: expected_columns(self._columns, aggs))

    def _column_aggs(self, agg_cls, on, ignore_nulls: bool, **extra) -> Dataset:
        columns = [on] if isinstance(on, str) else list(on) if on is not None else [
            c for c in self._dataset.columns() or [] if c not in self._columns
        ]
        return self.aggregate(*[agg_cls(c, ignore_nulls=ignore_nulls, **extra) for c in columns])

    def count(self) -> Dataset:
        """Rows per group (column ``count()``)."""
        return self.aggregate(Count())

    def sum(self, on=None, ignore_nulls: bool = True) -> Dataset:
        """Per-group sum of ``on`` (a column, a list, or None: every non-key column)."""
        return self._column_aggs(Sum, on, ignore_nulls)

    def min(self, on=None, ignore_nulls: bool = True) -> Dataset:
        return self._column_aggs(Min, on, ignore_nulls)

    def max(self, on=None, ignore_nulls: bool = True) -> Dataset:
        return self._column_aggs(Max, on, ignore_nulls)

    def mean(self, on=None, ignore_nulls: bool = True) -> Dataset:
        return self._column_aggs(Mean, on, ignore_nulls)

    def std(self, on=None, ddof: int = 1, ignore_nulls: bool = True) -> Dataset:
        """Per-group standard deviation with divisor ``N - ddof``."""
        return self._column_aggs(Std, on, ignore_nulls, ddof=ddof)

    def map_groups(self, fn, *, batch_format: str | None = "default", zero_copy_batch: bool = True,
                   **options) -> Dataset:
        """``fn(group)`` for every group, the group given in ``batch_format``; the
        batches it returns (or yields) make the output. ``options`` as for
        ``Dataset.map_batches`` (``fn_args``, ``fn_kwargs``, ``concurrency``, a
        callable class with ``fn_constructor_args``, ray task options)."""

        _blocks.check_batch_format(batch_format)
        if self._columns:
            source = self._dataset._all_to_all(
                Sort(_sort.SortKey.of(list(self._columns)), None, self._num_partitions), "Sort", columns_after=list,
            )
        else:
            source = self._dataset.repartition(1)
        return source._apply(
            MapGroups, fn, "map_groups", "MapGroups", key_columns=self._columns, batch_format=batch_format,
            zero_copy_batch=zero_copy_batch, **split_options(options),
        )


def _known_columns(dataset: Dataset) -> list | None:
    from ray.data import _plan

    return _plan.known_columns(dataset._logical_plan)
