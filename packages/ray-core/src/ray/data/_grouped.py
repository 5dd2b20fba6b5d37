"""``GroupedData``: what ``Dataset.groupby(key)`` returns.

Grouping is a sort: ``Dataset.sort(key)`` range-partitions the rows by key with
tasks (equal keys always land in the same block, see ``_sort``), then one task per
sorted block aggregates (``AggregateGroups``) or calls the user's function
(``MapGroups``) run by run. The output is ordered by key, as Ray's is. ``key=None``
puts every row in one group.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ray.data import _blocks, _sort
from ray.data._transforms import AggregateGroups, MapGroups
from ray.data.aggregate import AggregateFn, Count, Max, Mean, Min, Std, Sum

if TYPE_CHECKING:
    from ray.data.dataset import Dataset


class GroupedData:
    """Rows grouped by the values of ``key`` (a column, a list of them, or None)."""

    def __init__(self, dataset: Dataset, key, *, num_partitions: int | None = None):
        if key is not None:
            sort_key = _sort.SortKey.of(key)
            sort_key.check_columns(dataset.columns(), "groupby")
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

    def _sorted(self) -> Dataset:
        return self._dataset._sorted_by(_sort.SortKey.of(list(self._columns)), self._num_partitions)

    def aggregate(self, *aggs: AggregateFn) -> Dataset:
        """One row per group: the key column(s), then one column per aggregation
        (named by ``agg.name``)."""
        aggs = self._dataset._checked_aggs(aggs)
        if not self._columns:
            from ray.data.dataset import _from_rows

            return _from_rows([self._dataset.aggregate(*aggs)])
        transform = AggregateGroups(self._columns, tuple(aggs))
        return self._sorted()._per_block(transform, ray_remote_args={})

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
        from ray.data.dataset import _split_options

        _blocks.check_batch_format(batch_format)
        source = self._sorted() if self._columns else self._dataset.repartition(1)
        return source._apply(
            MapGroups, fn, "map_groups", key_columns=self._columns, batch_format=batch_format,
            zero_copy_batch=zero_copy_batch, **_split_options(options),
        )
