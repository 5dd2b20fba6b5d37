"""``ray.data.Dataset``: a list of blocks in the object store, transformed by tasks.

Execution is **eager**: every transformation (``map``, ``filter``, ``map_batches``,
``repartition``, ...) submits one ray task per block at once and returns a new
Dataset holding the output ObjectRefs, without waiting for them. Ray 2.x plans
transformations lazily and fuses them; here each step is its own round of tasks, and
``materialize()`` only waits for the blocks. Consuming calls (``count``, ``take``,
``iter_batches``, ``to_pandas``, aggregates, ``write_*``) wait for what they read.
All-to-all operations (``random_shuffle``, ``repartition(shuffle=True)``, ``sort``,
``groupby``, ``zip``) are rounds of tasks too; the driver sees only metadata, the
sort's key samples and aggregation accumulators, never the blocks.
"""

from __future__ import annotations

import inspect
import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import ray
from ray.data import _blocks, _io, _sort, _tasks
from ray.data._blocks import BlockMetadata, Schema
from ray.data._grouped import GroupedData
from ray.data._transforms import (
    AddColumn,
    FilterRows,
    FlatMapRows,
    MapBatches,
    MapRows,
    RenameColumns,
    SampleRows,
    SelectColumns,
)
from ray.data.aggregate import AggregateFn, Max, Mean, Min, Std, Sum

# Keys each block samples for a sort's boundaries: enough for even partitions of
# small datasets, a negligible cost next to sorting a block.
_SORT_SAMPLES_PER_BLOCK = 32


class Dataset:
    """Rows with named columns, split into blocks held in the object store."""

    def __init__(self, blocks: list, metadata: list):
        if len(blocks) != len(metadata):
            raise ValueError(f"{len(blocks)} blocks but {len(metadata)} metadata entries")
        self._blocks = list(blocks)
        # A BlockMetadata, or the ObjectRef of one still being computed.
        self._metadata: list[Any] = list(metadata)

    # -- what the driver knows ---------------------------------------------------------

    def _resolved_metadata(self) -> list[BlockMetadata]:
        pending = [i for i, m in enumerate(self._metadata) if not isinstance(m, BlockMetadata)]
        if pending:
            for i, meta in zip(pending, ray.get([self._metadata[i] for i in pending])):
                self._metadata[i] = meta
        return self._metadata

    def num_blocks(self) -> int:
        return len(self._blocks)

    def count(self) -> int:
        """Number of rows."""
        return sum(m.num_rows for m in self._resolved_metadata())

    def schema(self, fetch_if_missing: bool = True) -> Schema | None:
        """Column names and types (``.names``, ``.types``), or None for an empty dataset."""
        metadata = self._resolved_metadata()
        with_rows = [m.schema for m in metadata if m.num_rows and m.schema is not None]
        known = with_rows or [m.schema for m in metadata if m.schema is not None]
        return known[0] if known else None

    def columns(self, fetch_if_missing: bool = True) -> list[str] | None:
        schema = self.schema()
        return list(schema.names) if schema is not None else None

    def materialize(self) -> Dataset:
        """Wait until every block is computed (execution is eager: it already started)."""
        self._resolved_metadata()
        return self

    def __repr__(self) -> str:
        schema = self.schema()
        return (
            f"MaterializedDataset(num_blocks={self.num_blocks()}, num_rows={self.count()}, "
            f"schema={schema.as_braces() if schema else 'Unknown schema'})"
        )

    # -- transformations: one task per block -----------------------------------------

    def _per_block(self, transform, *, concurrency=None, ray_remote_args: dict) -> Dataset:
        task = _tasks.transform_block.options(**_remote_args(ray_remote_args))
        limit = _task_limit(concurrency)
        pairs, in_flight = [], []
        for block in self._blocks:
            if limit is not None and len(in_flight) >= limit:
                _, in_flight = ray.wait(in_flight, num_returns=1)
            out, meta = task.remote(block, transform)
            pairs.append((out, meta))
            in_flight.append(meta)
        return Dataset([p[0] for p in pairs], [p[1] for p in pairs])

    def _apply(self, transform_cls, fn, what: str, *, fn_args=None, fn_kwargs=None,
               fn_constructor_args=None, fn_constructor_kwargs=None, compute=None,
               concurrency=None, ray_remote_args: dict, **transform_fields) -> Dataset:
        """A function runs in one task per block; a callable class in actors."""
        is_class = inspect.isclass(fn)
        if not callable(fn):
            raise TypeError(f"Dataset.{what} needs a function, got {type(fn).__name__}: {fn!r:.60}")
        if not is_class and (fn_constructor_args or fn_constructor_kwargs):
            raise ValueError("fn_constructor_args/kwargs only apply when fn is a callable class")
        transform = transform_cls(
            fn=None if is_class else fn, fn_args=tuple(fn_args or ()),
            fn_kwargs=dict(fn_kwargs or {}), **transform_fields,
        )
        if not is_class:
            return self._per_block(transform, concurrency=concurrency, ray_remote_args=ray_remote_args)
        ctor = (tuple(fn_constructor_args or ()), dict(fn_constructor_kwargs or {}))
        return self._with_actors(fn, transform, _actor_count(concurrency, compute, fn, what), ctor,
                                 ray_remote_args)

    def map(self, fn: Callable[[dict], dict], **options) -> Dataset:
        """Apply ``fn`` to every row (a dict); it returns the new row.

        ``options`` as for ``map_batches``: ``fn_args``, ``fn_kwargs``, ``concurrency``,
        ``fn_constructor_args``/``kwargs`` for a callable class, ray task options.
        """
        return self._apply(MapRows, fn, "map", **_split_options(options))

    def filter(self, fn: Callable[[dict], bool], **options) -> Dataset:
        """Keep the rows for which ``fn(row)`` is true (``options`` as for ``map``)."""
        return self._apply(FilterRows, fn, "filter", **_split_options(options))

    def flat_map(self, fn: Callable[[dict], list], **options) -> Dataset:
        """Replace every row by the list of rows ``fn(row)`` returns (``options`` as for ``map``)."""
        return self._apply(FlatMapRows, fn, "flat_map", **_split_options(options))

    def map_batches(
        self,
        fn,
        *,
        batch_size: int | None | str = None,
        batch_format: str | None = "default",
        zero_copy_batch: bool = False,
        **options,
    ) -> Dataset:
        """Apply ``fn`` to batches of rows, one ray task per block.

        ``batch_format``: ``"default"``/``"numpy"`` (dict of column -> ndarray),
        ``"pandas"`` (DataFrame), ``"pyarrow"`` (Table) or None (the block as stored).
        ``batch_size``: rows per call within a block; None (default) passes the whole
        block, ``"default"`` means 1024. ``fn`` returns (or yields) batches in any of
        those formats; ``fn_args``/``fn_kwargs`` follow the batch. A callable class runs
        in ``concurrency`` actors, each built once with ``fn_constructor_args``/
        ``fn_constructor_kwargs`` (this call then waits for them, and stops them).
        ``concurrency`` for a function caps the tasks in flight. Batches are writable
        copies unless ``zero_copy_batch=True``. Other keywords are ray task options
        (``num_cpus``, ``num_gpus``, ``memory``, ``resources``, ...).
        """
        _blocks.check_batch_format(batch_format)
        if batch_size == "default":
            batch_size = 1024
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
            raise ValueError(f"batch_size must be a positive int, None or 'default', got {batch_size!r}")
        return self._apply(
            MapBatches, fn, "map_batches", batch_size=batch_size, batch_format=batch_format,
            zero_copy_batch=zero_copy_batch, **_split_options(options),
        )

    def _with_actors(self, cls, transform, num_actors, ctor, ray_remote_args):
        actor_cls = _tasks.TransformActor.options(**_remote_args(ray_remote_args))
        actors = [actor_cls.remote(cls, *ctor) for _ in range(min(num_actors, max(self.num_blocks(), 1)))]
        try:
            pairs = [
                actors[i % len(actors)].apply.remote(block, transform)
                for i, block in enumerate(self._blocks)
            ]
            ray.get([meta for _, meta in pairs])  # the actors must finish before they go
        finally:
            for actor in actors:
                ray.kill(actor)
        return Dataset([p[0] for p in pairs], [p[1] for p in pairs])

    # -- moving rows between blocks ---------------------------------------------------

    def _row_ranges(self, ranges: list[tuple[int, int]]) -> list[tuple]:
        """(block ref, metadata ref) holding global rows [lo, hi), per range, made by tasks."""
        counts = [m.num_rows for m in self._resolved_metadata()]
        starts = [sum(counts[:i]) for i in range(len(counts))]
        outputs = []
        for lo, hi in ranges:
            pieces = [
                (ref, (max(lo - s, 0), min(hi - s, c)))
                for ref, s, c in zip(self._blocks, starts, counts)
                if s < hi and s + c > lo
            ]
            if not pieces and self._blocks:  # an empty range: an empty slice keeps the columns
                pieces = [(self._blocks[0], (0, 0))]
            if not pieces:
                outputs.append(_put_block(_blocks.build_block([])))
            else:
                bounds, refs = [b for _, b in pieces], [ref for ref, _ in pieces]
                outputs.append(_tasks.assemble_slices.remote(bounds, *refs))
        return outputs

    def repartition(self, num_blocks: int, *, shuffle: bool = False) -> Dataset:
        """The same rows in ``num_blocks`` blocks of near-equal size.

        ``shuffle=False`` keeps row order (each output block takes a contiguous range);
        ``shuffle=True`` deals rows round-robin from every input block into every
        output block (an all-to-all exchange; order is not kept).
        """
        _check_positive(num_blocks, "num_blocks")
        if shuffle:
            return self._deal_into(num_blocks, seed=None)
        return _from_pairs(self._row_ranges(_even_ranges(self.count(), num_blocks)))

    def random_shuffle(self, *, seed: int | None = None, num_blocks: int | None = None) -> Dataset:
        """The rows in random order: each block deals its rows to random output blocks,
        which shuffle what they receive (``seed`` makes it repeatable)."""
        return self._deal_into(num_blocks or max(self.num_blocks(), 1), seed=_seed(seed))

    def _deal_into(self, num_blocks: int, *, seed: int | None) -> Dataset:
        counts = [m.num_rows for m in self._resolved_metadata()]
        dealt = [
            _tasks.deal_rows.options(num_returns=num_blocks).remote(
                block, num_blocks, sum(counts[:i]), None if seed is None else [seed, 0, i]
            )
            for i, block in enumerate(self._blocks)
        ]
        if num_blocks == 1:
            dealt = [[ref] for ref in dealt]
        outputs = [
            _tasks.concat_parts.remote(None if seed is None else [seed, 1, k], *[parts[k] for parts in dealt])
            for k in range(num_blocks)
        ]
        return _from_pairs(outputs)

    def split(self, n: int, *, equal: bool = False) -> list[Dataset]:
        """``n`` Datasets of contiguous, near-equal row ranges (one block each); with
        ``equal=True`` each gets exactly ``count() // n`` rows and the rest are dropped."""
        _check_positive(n, "n")
        total = self.count()
        ranges = [(i * (total // n), (i + 1) * (total // n)) for i in range(n)] if equal else _even_ranges(total, n)
        return [_from_pairs([pair]) for pair in self._row_ranges(ranges)]

    def limit(self, limit: int) -> Dataset:
        """The first ``limit`` rows."""
        counts = [m.num_rows for m in self._resolved_metadata()]
        starts = [sum(counts[:i]) for i in range(len(counts))]
        ranges = [(s, min(s + c, limit)) for s, c in zip(starts, counts) if s < limit]
        return _from_pairs(self._row_ranges(ranges or [(0, 0)]))

    def split_at_indices(self, indices: list[int]) -> list[Dataset]:
        """``len(indices) + 1`` Datasets: rows ``[0, indices[0])``, ``[indices[0],
        indices[1])``, ... (indices past the end give empty Datasets)."""
        total = self.count()
        return [_from_pairs([pair]) for pair in self._row_ranges(_sort.index_ranges(indices, total))]

    def split_proportionately(self, proportions: list[float]) -> list[Dataset]:
        """``len(proportions) + 1`` Datasets, the i-th with ``proportions[i]`` of the
        rows (the last takes the rest); every split gets at least one row."""
        return self.split_at_indices(_sort.proportion_indices(proportions, self.count()))

    def train_test_split(self, test_size: float | int, *, shuffle: bool = False,
                         seed: int | None = None) -> tuple[Dataset, Dataset]:
        """``(train, test)``: ``test_size`` a fraction in (0, 1) or a row count; the
        test rows are the last ones (after a ``random_shuffle(seed=)`` if ``shuffle``)."""
        ds = self.random_shuffle(seed=seed) if shuffle else self
        total = ds.count()
        if isinstance(test_size, float):
            if not 0 < test_size < 1:
                raise ValueError(f"a float test_size must be between 0 and 1, got {test_size}")
            train, test = ds.split_proportionately([1 - test_size])
            return train, test
        if not isinstance(test_size, int) or not 0 < test_size < total:
            raise ValueError(
                f"test_size must be a float in (0, 1) or an int in [1, {total - 1}] "
                f"(this dataset has {total} rows), got {test_size!r}"
            )
        train, test = ds.split_at_indices([total - test_size])
        return train, test

    def zip(self, *others: Dataset) -> Dataset:
        """The columns of this dataset and ``others`` side by side, row by row (the
        datasets need equal row counts; a repeated column name gets ``_1``, ``_2``...).
        The others' rows are re-cut by tasks to line up with this dataset's blocks."""
        for other in others:
            if not isinstance(other, Dataset):
                raise TypeError(f"zip takes Datasets, got {type(other).__name__}")
        counts = [m.num_rows for m in self._resolved_metadata()]
        for other in others:
            if other.count() != sum(counts):
                raise ValueError(
                    f"zip needs datasets with the same number of rows: this one has {sum(counts)}, "
                    f"the other {other.count()}; use limit() or split_at_indices() to match them"
                )
        ranges = [(sum(counts[:i]), sum(counts[:i + 1])) for i in range(len(counts))]
        aligned = [[ref for ref, _ in other._row_ranges(ranges)] for other in others]
        return _from_pairs([
            _tasks.zip_blocks.remote(block, *[parts[i] for parts in aligned])
            for i, block in enumerate(self._blocks)
        ])

    def random_sample(self, fraction: float, *, seed: int | None = None) -> Dataset:
        """Each row kept with probability ``fraction`` (so about ``fraction * count()``
        rows); ``seed`` makes it repeatable."""
        if not isinstance(fraction, (int, float)) or not 0 <= fraction <= 1:
            raise ValueError(f"fraction must be between 0 and 1, got {fraction!r}")
        seed = _seed(seed)
        return _from_pairs([
            _tasks.transform_block.remote(block, SampleRows(float(fraction), (seed, i)))
            for i, block in enumerate(self._blocks)
        ])

    # -- columns -------------------------------------------------------------------------

    def rename_columns(self, names, *, concurrency=None, **ray_remote_args) -> Dataset:
        """Rename columns: ``names`` maps old to new names, or lists a new name for
        every column in order (one task per block, with ``ray_remote_args``)."""
        current = self.columns() or []
        if isinstance(names, dict):
            self._known_columns(list(names), "rename_columns")
            mapping = tuple(names.items())
        elif isinstance(names, (list, tuple)):
            if len(names) != len(current):
                raise ValueError(
                    f"rename_columns got {len(names)} names for {len(current)} columns {current}; "
                    "give one new name per column, or a dict {old: new}"
                )
            mapping = tuple(zip(current, names))
        else:
            raise TypeError(f"rename_columns takes a dict {{old: new}} or a list of names, got {names!r}")
        new = [dict(mapping).get(c, c) for c in current]
        if len(set(new)) != len(new):
            raise ValueError(f"rename_columns would give two columns the same name: {new}")
        return self._per_block(RenameColumns(mapping), concurrency=concurrency, ray_remote_args=ray_remote_args)


    def select_columns(self, cols: list[str]) -> Dataset:
        """Only the columns ``cols``, in that order."""
        return self._per_block(SelectColumns(tuple(self._known_columns(cols, "select_columns"))),
                               ray_remote_args={})

    def drop_columns(self, cols: list[str]) -> Dataset:
        """Every column but ``cols``."""
        dropped = set(self._known_columns(cols, "drop_columns"))
        kept = tuple(c for c in self.columns() or [] if c not in dropped)
        return self._per_block(SelectColumns(kept), ray_remote_args={})

    def add_column(self, col: str, fn: Callable, *, batch_format: str | None = "pandas", **options) -> Dataset:
        """A new (or replaced) column ``col`` = ``fn(batch)``, batch by batch."""
        return self.map_batches(AddColumn(col, fn), batch_format=batch_format, **options)

    def _known_columns(self, cols, what: str) -> list:
        cols = [cols] if isinstance(cols, str) else list(cols)
        self._aggregate_columns(cols, what)  # raises, naming the closest column, if one is unknown
        return cols

    def union(self, *others: Dataset) -> Dataset:
        """This dataset's blocks followed by the others' (no data moves)."""
        for other in others:
            if not isinstance(other, Dataset):
                raise TypeError(f"union takes Datasets, got {type(other).__name__}")
        return Dataset(
            [b for ds in (self, *others) for b in ds._blocks],
            [m for ds in (self, *others) for m in ds._metadata],
        )

    # -- consuming ---------------------------------------------------------------------

    def iter_rows(self, *, prefetch_batches: int = 1) -> Iterator[dict]:
        """Every row as a dict, in order (blocks are fetched one at a time)."""
        for ref in self._blocks:
            yield from _blocks.iter_rows(ray.get(ref))

    def iter_batches(
        self,
        *,
        batch_size: int | None = 256,
        batch_format: str | None = "default",
        drop_last: bool = False,
        prefetch_batches: int = 1,
    ) -> Iterator[Any]:
        """Batches of ``batch_size`` rows across block boundaries (None: one per block).

        ``prefetch_batches`` is accepted for compatibility: blocks are already computed
        (eager execution), so each fetch is a read from the object store.
        """
        _blocks.check_batch_format(batch_format)
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
            raise ValueError(f"batch_size must be a positive int or None, got {batch_size!r}")
        buffer, offset = None, 0  # rows before ``offset`` in ``buffer`` were yielded
        for ref in self._blocks:
            block = ray.get(ref)
            if batch_size is None:
                if _blocks.num_rows(block):
                    yield _consumer_batch(block, batch_format)
                continue
            if buffer is None:
                buffer = block
            else:  # one join per block, not per batch
                rest = _blocks.slice_block(buffer, offset, _blocks.num_rows(buffer))
                buffer = _blocks.concat_blocks([rest, block])
            offset = 0
            while _blocks.num_rows(buffer) - offset >= batch_size:
                piece = _blocks.slice_block(buffer, offset, offset + batch_size)
                yield _consumer_batch(piece, batch_format)
                offset += batch_size
        if buffer is not None and _blocks.num_rows(buffer) > offset and not drop_last:
            piece = _blocks.slice_block(buffer, offset, _blocks.num_rows(buffer))
            yield _consumer_batch(piece, batch_format)

    def take(self, limit: int = 20) -> list[dict]:
        """The first ``limit`` rows."""
        rows: list[dict] = []
        for ref, meta in zip(self._blocks, self._resolved_metadata()):
            if len(rows) >= limit:
                break
            if meta.num_rows:
                block = ray.get(ref)
                rows.extend(_blocks.iter_rows(_blocks.slice_block(block, 0, limit - len(rows))))
        return rows

    def take_all(self, limit: int | None = None) -> list[dict]:
        """Every row; raises ValueError if there are more than ``limit``."""
        _check_limit(self, limit, "take_all")
        return list(self.iter_rows())

    def take_batch(self, batch_size: int = 20, *, batch_format: str | None = "default"):
        batch = next(self.iter_batches(batch_size=batch_size, batch_format=batch_format), None)
        if batch is None:
            raise ValueError("take_batch on an empty dataset")
        return batch

    def show(self, limit: int = 20) -> None:
        for row in self.take(limit):
            print(row)

    # -- aggregates ----------------------------------------------------------------------

    def _checked_aggs(self, aggs) -> tuple:
        for agg in aggs:
            if not isinstance(agg, AggregateFn):
                raise TypeError(
                    f"aggregate takes ray.data.aggregate objects (Count(), Sum('col'), "
                    f"AggregateFn(...)), got {type(agg).__name__}: {agg!r:.60}"
                )
        if not aggs:
            raise ValueError("aggregate needs at least one aggregation, e.g. aggregate(Count())")
        self._aggregate_columns([c for agg in aggs for c in agg.columns()])
        return tuple(aggs)

    def aggregate(self, *aggs: AggregateFn) -> dict:
        """``{agg.name: result}`` over the whole dataset: each block is folded by a
        task, the driver merges the accumulators and finalizes them."""
        aggs = self._checked_aggs(aggs)
        per_block = ray.get([_tasks.accumulate_block.remote(ref, aggs) for ref in self._blocks])
        results = {}
        for i, agg in enumerate(aggs):
            acc = agg.init(None)
            for accs in per_block:
                acc = agg.merge(acc, accs[i])
            results[agg.name] = agg.finalize(acc)
        return results

    def _column_aggregate(self, agg_cls, on, ignore_nulls: bool, **extra):
        columns = self._aggregate_columns(on, agg_cls.kind)
        results = self.aggregate(*[agg_cls(c, ignore_nulls=ignore_nulls, **extra) for c in columns])
        return next(iter(results.values())) if isinstance(on, str) else results

    def _aggregate_columns(self, on, what: str = "aggregate") -> list:
        names = self.columns() or []
        columns = list(names) if on is None else [on] if isinstance(on, str) else list(on)
        _blocks.check_columns(columns, names, what)
        return columns

    def sum(self, on=None, ignore_nulls: bool = True):
        """Sum of column ``on`` (a list or None: a dict ``{"sum(col)": value}``); None
        when there are no values."""
        return self._column_aggregate(Sum, on, ignore_nulls)

    def min(self, on=None, ignore_nulls: bool = True):
        return self._column_aggregate(Min, on, ignore_nulls)

    def max(self, on=None, ignore_nulls: bool = True):
        return self._column_aggregate(Max, on, ignore_nulls)

    def mean(self, on=None, ignore_nulls: bool = True):
        return self._column_aggregate(Mean, on, ignore_nulls)

    def std(self, on=None, ddof: int = 1, ignore_nulls: bool = True):
        """Standard deviation with divisor ``N - ddof`` (merged per block, one pass)."""
        return self._column_aggregate(Std, on, ignore_nulls, ddof=ddof)

    def unique(self, column: str) -> list:
        """The distinct values of ``column``, in sorted order (null last), found by a
        groupby."""
        self._aggregate_columns([column], "unique")
        return [row[column] for row in self.groupby(column).count().iter_rows()]

    # -- sort and groupby --------------------------------------------------------------

    def sort(self, key, descending=False, boundaries=None) -> Dataset:
        """The rows ordered by ``key`` (a column or a list), ascending unless
        ``descending`` (a bool, or one per column); nulls last. A distributed sort:
        blocks sample their keys, the driver picks boundaries, tasks range-partition
        every block, and one task per output block sorts its partition.
        ``boundaries`` (optional, Ray's spelling) gives the partition boundaries
        instead: key values (tuples for several columns) in any order."""
        sort_key = _sort.SortKey.of(key, descending)
        sort_key.check_columns(self.columns(), "sort")
        return self._sorted_by(sort_key, None, boundaries)

    def _sorted_by(self, sort_key: _sort.SortKey, num_parts: int | None, boundaries=None) -> Dataset:
        live = [ref for ref, m in zip(self._blocks, self._resolved_metadata()) if m.num_rows]
        if not live:
            return self
        if boundaries is not None:
            boundaries = _sort.given_boundaries(boundaries, sort_key)
        else:
            samples = ray.get([
                _tasks.sample_sort_keys.remote(ref, sort_key, _SORT_SAMPLES_PER_BLOCK, [i])
                for i, ref in enumerate(live)
            ])
            samples = [s for part in samples for s in part]
            boundaries = _sort.choose_boundaries(samples, sort_key, num_parts or len(live))
        num_parts = len(boundaries) + 1
        split = _tasks.split_by_boundaries.options(num_returns=num_parts)
        parts = [split.remote(ref, sort_key, boundaries) for ref in live]
        if num_parts == 1:
            parts = [[ref] for ref in parts]
        return _from_pairs([
            _tasks.merge_sorted.remote(sort_key, *[p[k] for p in parts]) for k in range(num_parts)
        ])

    def groupby(self, key, num_partitions: int | None = None) -> GroupedData:
        """Group rows by ``key`` (a column, a list of them, or None for one group of
        every row); aggregate with ``count``/``sum``/``min``/``max``/``mean``/``std``/
        ``aggregate`` or transform with ``map_groups``."""
        return GroupedData(self, key, num_partitions=num_partitions)

    # -- conversion and output ---------------------------------------------------------

    def to_pandas(self, limit: int | None = None):
        """All rows as one pandas DataFrame (index 0..n-1)."""
        pd = _blocks.require_pandas("Dataset.to_pandas")
        _check_limit(self, limit, "to_pandas")
        frames = [_blocks.to_pandas_block(b) for b in ray.get(self._blocks)]
        frames = [f for f in frames if len(f)] or frames[:1]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def to_pandas_refs(self) -> list:
        """One ObjectRef of a pandas DataFrame per block (DataFrame blocks are not copied)."""
        _blocks.require_pandas("Dataset.to_pandas_refs")
        metadata = self._resolved_metadata()
        return [
            ref if meta.is_pandas else _tasks.to_pandas_task.remote(ref)
            for ref, meta in zip(self._blocks, metadata)
        ]

    def to_numpy_refs(self, *, column: str | None = None) -> list:
        """One ObjectRef per block: a dict of column -> ndarray, or the ``column`` array."""
        if column is not None:
            self._aggregate_columns([column], "to_numpy_refs")
        return [_tasks.to_numpy_task.remote(ref, column) for ref in self._blocks]

    def to_modin(self):
        """A ``modin.pandas.DataFrame`` whose row partitions are this dataset's blocks."""
        try:
            from modin.distributed.dataframe.pandas import from_partitions
        except ImportError as e:
            raise ImportError("Dataset.to_modin needs modin: pip install modin") from e
        return from_partitions(self.to_pandas_refs(), axis=0)

    def _write(self, path: str, fmt: str, suffix: str, options: dict) -> None:
        """One file per block under directory ``path``, each written by a task."""
        directory = _io.local_path(path)
        prefix = uuid.uuid4().hex[:12]
        ray.get([
            _io.write_file_task.remote(ref, os.path.join(directory, f"{prefix}_{i:06d}.{suffix}"), fmt, options)
            for i, (ref, meta) in enumerate(zip(self._blocks, self._resolved_metadata()))
            if meta.num_rows or i == 0
        ])

    def write_csv(self, path: str, **pandas_kwargs) -> None:
        """One CSV file per block under directory ``path`` (written by tasks);
        keywords go to ``pandas.DataFrame.to_csv``."""
        self._write(path, "csv", "csv", pandas_kwargs)

    def write_json(self, path: str, **pandas_json_args) -> None:
        """One JSON lines file (``.json``, an object per row) per block under ``path``;
        keywords go to ``pandas.DataFrame.to_json`` (e.g. ``date_format="iso"``)."""
        self._write(path, "json", "json", pandas_json_args)

    def write_parquet(self, path: str, **arrow_parquet_args) -> None:
        """One Parquet file per block under ``path`` (needs pyarrow); keywords go to
        ``pyarrow.parquet.write_table`` (e.g. ``compression="zstd"``)."""
        _blocks.require_pyarrow("Dataset.write_parquet")
        self._write(path, "parquet", "parquet", arrow_parquet_args)

    def write_numpy(self, path: str, *, column: str) -> None:
        """Column ``column`` as one ``.npy`` file per block under ``path``."""
        self._aggregate_columns([column], "write_numpy")
        self._write(path, "numpy", "npy", {"column": column})


MaterializedDataset = Dataset


def _from_pairs(pairs: list) -> Dataset:
    return Dataset([p[0] for p in pairs], [p[1] for p in pairs])


def _from_rows(rows: list[dict]) -> Dataset:
    return _from_pairs([_put_block(_blocks.build_block(rows))])


def _even_ranges(total: int, parts: int) -> list[tuple[int, int]]:
    return [(total * j // parts, total * (j + 1) // parts) for j in range(parts)]


def _check_positive(value, name: str) -> None:
    if not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")


def _seed(seed: int | None) -> int:
    if seed is None:
        return int.from_bytes(os.urandom(4), "little")
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int or None, got {seed!r}")
    return seed


def _consumer_batch(block, batch_format):
    # A map_batches batch keeps its block's index (Modin's partitions carry their
    # DataFrame's index through to_modin); a consumer's pandas batch counts from 0.
    batch = _blocks.to_batch(block, batch_format)
    return batch.reset_index(drop=True) if batch_format == "pandas" else batch


def _put_block(block) -> tuple:
    return ray.put(block), _blocks.metadata_of(block)


def _check_limit(ds: Dataset, limit: int | None, what: str) -> None:
    if limit is not None and ds.count() > limit:
        raise ValueError(
            f"{what}: the dataset has {ds.count()} rows, more than limit={limit}; "
            f"raise the limit or use iter_batches()/take()"
        )


_FN_OPTIONS = ("fn_args", "fn_kwargs", "fn_constructor_args", "fn_constructor_kwargs",
               "compute", "concurrency")


def _split_options(options: dict) -> dict:
    """map/filter/flat_map/map_batches keywords: ours by name, the rest ray task options."""
    ours = {k: options.pop(k) for k in _FN_OPTIONS if k in options}
    return {**ours, "ray_remote_args": options}


def _remote_args(args: dict) -> dict:
    return {k: v for k, v in args.items() if v is not None}


def _task_limit(concurrency) -> int | None:
    if concurrency is None:
        return None
    if isinstance(concurrency, tuple):
        concurrency = concurrency[-1]
    if not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a positive int, got {concurrency!r}")
    return concurrency


def _actor_count(concurrency, compute, cls, what: str) -> int:
    size = getattr(compute, "size", None) or getattr(compute, "max_size", None)
    count = _task_limit(concurrency) or size
    if count is None:
        raise ValueError(
            f"{what} with a callable class ({cls.__qualname__}) runs it in actors: "
            "pass concurrency=N (the number of actors)"
        )
    return count
