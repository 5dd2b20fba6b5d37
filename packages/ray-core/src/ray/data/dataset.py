"""``ray.data.Dataset``: a lazy plan over blocks in the object store.

Transformations (``map``, ``filter``, ``map_batches``, ``select_columns``, ``sort``,
``groupby(...).aggregate``, ``repartition``, ``union``, ``zip``, ``limit``, ...) only
extend the plan (``_plan``); consuming calls (``count``, ``take``, ``iter_batches``,
``iter_rows``, ``to_pandas``, aggregates, ``write_*``) run it with the streaming
executor (``_executor``), which fuses consecutive maps into one task per block, keeps
a bounded number of blocks in flight and frees each block once it is consumed, so a
pipeline over more data than the object store holds runs. ``materialize()`` runs the
plan once and keeps the blocks (a ``MaterializedDataset``); consuming a Dataset that
is not materialized runs its plan again, as in Ray 2.x. ``stats()`` describes the
last run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

import ray
from ray.data import _blocks, _executor, _io, _plan, _shuffle, _sort, _tasks
from ray.data._blocks import BlockMetadata, Schema
from ray.data._grouped import GroupedData
from ray.data._options import (
    actor_count,
    check_positive,
    check_prefetch,
    remote_args,
    seed_of,
    split_options,
    task_limit,
)
from ray.data._plan import ActorPoolStrategy, RefBundle
from ray.data._prefetch import Prefetcher
from ray.data._transforms import (
    AddColumn,
    FilterExpression,
    FilterRows,
    FlatMapRows,
    MapBatches,
    MapRows,
    RenameColumns,
    SampleRows,
    SelectColumns,
)
from ray.data.aggregate import AggregateFn, Max, Mean, Min, Std, Sum


class Dataset:
    """Rows with named columns, split into blocks, computed when consumed."""

    def __init__(self, plan: _plan.LogicalOperator):
        self._logical_plan = plan
        self._last_stats = None

    # -- running the plan ----------------------------------------------------------------

    def _source_stats(self):
        op = self._logical_plan
        while op.inputs:
            op = op.inputs[0]
        return op.stats if isinstance(op, _plan.InputData) else None

    def _execution(self) -> _executor.Execution:
        run = _executor.Execution(self._logical_plan, parent_stats=self._source_stats())
        if not isinstance(self._logical_plan, _plan.InputData):
            self._last_stats = run.stats
        return run

    def _stream(self) -> Iterator[RefBundle]:
        return iter(self._execution())

    def _materialized_bundles(self) -> list[RefBundle]:
        if isinstance(self._logical_plan, _plan.InputData):
            return list(self._execution())
        return self.materialize()._materialized_bundles()

    def materialize(self) -> MaterializedDataset:
        """Run the plan and keep every block in the object store: the returned
        Dataset reads them instead of computing them again."""
        if isinstance(self._logical_plan, _plan.InputData) and all(
            isinstance(m, BlockMetadata) for m in self._logical_plan.metadata
        ):
            return self if isinstance(self, MaterializedDataset) else MaterializedDataset(self._logical_plan)
        run = self._execution()
        bundles = list(run)
        source = _plan.InputData(
            tuple(b.block_ref for b in bundles), tuple(b.metadata for b in bundles), stats=run.stats
        )
        out = MaterializedDataset(source)
        out._last_stats = run.stats
        return out

    def stats(self) -> str:
        """What the last run of this Dataset did, operator by operator (tasks, blocks,
        remote wall and CPU time, rows, bytes), as Ray prints it; empty before any."""
        stats = self._last_stats or self._source_stats()
        return stats.to_string() if stats is not None else ""

    def iter_internal_ref_bundles(self) -> Iterator[RefBundle]:
        """The output blocks as ``RefBundle``s (``block_ref``, ``metadata``), streamed."""
        return self._stream()

    def get_internal_block_refs(self) -> list:
        return [b.block_ref for b in self._materialized_bundles()]

    # -- what is known ------------------------------------------------------------------

    def num_blocks(self) -> int:
        """Blocks in the output (runs the plan unless it is materialized; Ray 2.x
        raises there instead)."""
        if isinstance(self._logical_plan, _plan.InputData):
            return len(self._logical_plan.block_refs)
        return sum(1 for _ in self._stream())

    def count(self) -> int:
        """Number of rows (from metadata where the plan does not change it)."""
        rows = _plan.known_num_rows(self._logical_plan)
        if rows is not None:
            return rows
        return sum(b.metadata.num_rows for b in self._stream())

    def schema(self, fetch_if_missing: bool = True) -> Schema | None:
        """Column names and types (``.names``, ``.types``), or None for an empty
        dataset. Unless known from metadata, the first rows are computed."""
        known = _plan.known_schema(self._logical_plan)
        if known is not None or not fetch_if_missing:
            return known
        first = None
        for bundle in _executor.Execution(_plan.Limit(self._logical_plan, 1)):
            schema = bundle.metadata.schema
            if schema is not None and (bundle.metadata.num_rows or first is None):
                first = schema
        return first

    def columns(self, fetch_if_missing: bool = True) -> list[str] | None:
        schema = self.schema(fetch_if_missing)
        return list(schema.names) if schema is not None else None

    def size_bytes(self) -> int:
        return sum(b.metadata.size_bytes for b in self._stream())

    def input_files(self) -> list[str]:
        files = [f for b in self._stream() for f in b.metadata.input_files]
        return list(dict.fromkeys(files))

    def __repr__(self) -> str:
        if isinstance(self._logical_plan, _plan.InputData):
            schema = self.schema(fetch_if_missing=False)
            return (
                f"{type(self).__name__}(num_blocks={self.num_blocks()}, num_rows={self.count()}, "
                f"schema={schema.as_braces() if schema else 'Unknown schema'})"
            )
        return "\n".join(_plan.describe(self._logical_plan))

    # -- one-to-one transformations ------------------------------------------------------

    def _map(self, transform, label: str, *, ray_remote_args: dict | None = None, concurrency=None,
             columns_after=None, **fields) -> Dataset:
        args = remote_args(ray_remote_args or {})
        if args:
            _tasks.run_map.options(**args)  # unknown or bad options fail here, not at run time
        return Dataset(_plan.MapOperator(
            self._logical_plan, transform, label, args, task_limit(concurrency),
            columns_after=columns_after, **fields,
        ))

    def _apply(self, transform_cls, fn, what: str, label: str, *, fn_args=None, fn_kwargs=None,
               fn_constructor_args=None, fn_constructor_kwargs=None, compute=None,
               concurrency=None, ray_remote_args: dict, **transform_fields) -> Dataset:
        """A function runs in one task per block; a callable class in actors."""
        is_class = inspect.isclass(fn)
        if not callable(fn):
            raise TypeError(f"Dataset.{what} needs a function, got {type(fn).__name__}: {fn!r:.60}")
        if not is_class and (fn_constructor_args or fn_constructor_kwargs):
            raise ValueError("fn_constructor_args/kwargs only apply when fn is a callable class")
        if not is_class and compute not in (None, "tasks") and not isinstance(compute, ActorPoolStrategy):
            raise ValueError(f"compute must be 'tasks', 'actors' or an ActorPoolStrategy, got {compute!r}")
        transform = transform_cls(
            fn=None if is_class else fn, fn_args=tuple(fn_args or ()),
            fn_kwargs=dict(fn_kwargs or {}), **transform_fields,
        )
        name = f"{label}({_fn_name(fn)})"
        if not is_class:
            return self._map(transform, name, ray_remote_args=ray_remote_args, concurrency=concurrency)
        actors = actor_count(concurrency, compute, fn, what)
        args = remote_args(ray_remote_args)
        if args:
            _tasks.TransformActor.options(**args)
        return Dataset(_plan.MapOperator(
            self._logical_plan, transform, name, args, actors, fn_class=fn,
            fn_constructor=(tuple(fn_constructor_args or ()), dict(fn_constructor_kwargs or {})),
        ))

    def map(self, fn: Callable[[dict], dict], **options) -> Dataset:
        """Apply ``fn`` to every row (a dict); it returns the new row.

        ``options`` as for ``map_batches``: ``fn_args``, ``fn_kwargs``, ``concurrency``,
        ``fn_constructor_args``/``kwargs`` for a callable class, ray task options.
        """
        return self._apply(MapRows, fn, "map", "Map", **split_options(options))

    def filter(self, fn: Callable[[dict], bool] | None = None, expr=None, **options) -> Dataset:
        """Keep the rows for which ``fn(row)`` is true (``options`` as for ``map``), or
        where the expression ``expr`` holds: a ``ray.data.expressions`` expression
        (``col("x") > 1``), a string (``"x > 1"``) or a ``pyarrow.compute.Expression``,
        evaluated by Arrow, and pushed into a Parquet read that comes right before."""
        if (fn is None) == (expr is None):
            raise ValueError("Dataset.filter takes a function fn or an expression expr (exactly one)")
        if fn is not None:
            return self._apply(FilterRows, fn, "filter", "Filter", **split_options(options))
        from ray.data.expressions import to_pyarrow_expression

        expression = to_pyarrow_expression(expr)
        split = split_options(options)
        return self._map(FilterExpression(expression), f"Filter({expression})",
                         ray_remote_args=split["ray_remote_args"], concurrency=split.get("concurrency"),
                         columns_after=list, pushdown_filter=expression)

    def flat_map(self, fn: Callable[[dict], list], **options) -> Dataset:
        """Replace every row by the list of rows ``fn(row)`` returns (``options`` as for ``map``)."""
        return self._apply(FlatMapRows, fn, "flat_map", "FlatMap", **split_options(options))

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
        those formats (a DataFrame makes a pandas block, the others Arrow blocks);
        ``fn_args``/``fn_kwargs`` follow the batch. A callable class runs in
        ``concurrency`` actors, each built once with ``fn_constructor_args``/
        ``fn_constructor_kwargs``. ``concurrency`` for a function caps the tasks in
        flight. Batches are writable copies unless ``zero_copy_batch=True`` (Arrow
        tables are immutable and never copied). Other keywords are ray task options
        (``num_cpus``, ``num_gpus``, ``memory``, ``resources``, ...). Consecutive maps
        with the same task options run fused, in one task per block.
        """
        _blocks.check_batch_format(batch_format)
        if batch_size == "default":
            batch_size = 1024
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
            raise ValueError(f"batch_size must be a positive int, None or 'default', got {batch_size!r}")
        return self._apply(
            MapBatches, fn, "map_batches", "MapBatches", batch_size=batch_size, batch_format=batch_format,
            zero_copy_batch=zero_copy_batch, **split_options(options),
        )

    def add_column(self, col: str, fn: Callable, *, batch_format: str | None = "pandas", **options) -> Dataset:
        """A new (or replaced) column ``col`` = ``fn(batch)``, batch by batch."""
        mapped = self.map_batches(AddColumn(col, fn), batch_format=batch_format, **options)
        op = mapped._logical_plan
        return Dataset(dataclasses.replace(
            op, label=f"AddColumn({col})", columns_after=lambda cols: [*[c for c in cols if c != col], col]
            if col not in cols else list(cols),
        ))

    def select_columns(self, cols: list[str], **ray_remote_args) -> Dataset:
        """Only the columns ``cols``, in that order (pushed into a Parquet read)."""
        cols = self._known_columns(cols, "select_columns")
        return self._map(SelectColumns(tuple(cols)), "Project", ray_remote_args=ray_remote_args,
                         columns_after=lambda _: list(cols), pushdown_columns=tuple(cols))

    def drop_columns(self, cols: list[str], **ray_remote_args) -> Dataset:
        """Every column but ``cols``."""
        dropped = tuple(self._known_columns(cols, "drop_columns"))
        return self._map(SelectColumns((), dropped), "Project", ray_remote_args=ray_remote_args,
                         columns_after=lambda names: [c for c in names if c not in dropped])

    def rename_columns(self, names, *, concurrency=None, **ray_remote_args) -> Dataset:
        """Rename columns: ``names`` maps old to new names, or lists a new name for
        every column in order (one task per block, with ``ray_remote_args``)."""
        if isinstance(names, dict):
            self._known_columns(list(names), "rename_columns")
            mapping = tuple(names.items())
        elif isinstance(names, (list, tuple)):
            current = self.columns() or []
            if len(names) != len(current):
                raise ValueError(
                    f"rename_columns got {len(names)} names for {len(current)} columns {current}; "
                    "give one new name per column, or a dict {old: new}"
                )
            mapping = tuple(zip(current, names))
        else:
            raise TypeError(f"rename_columns takes a dict {{old: new}} or a list of names, got {names!r}")
        known = _plan.known_columns(self._logical_plan)
        if known is not None:
            new = [dict(mapping).get(c, c) for c in known]
            if len(set(new)) != len(new):
                raise ValueError(f"rename_columns would give two columns the same name: {new}")
        return self._map(RenameColumns(mapping), "RenameColumns", ray_remote_args=ray_remote_args,
                         concurrency=concurrency, columns_after=lambda cols: [dict(mapping).get(c, c) for c in cols])

    def random_sample(self, fraction: float, *, seed: int | None = None) -> Dataset:
        """Each row kept with probability ``fraction`` (so about ``fraction * count()``
        rows); ``seed`` makes it repeatable."""
        if not isinstance(fraction, (int, float)) or not 0 <= fraction <= 1:
            raise ValueError(f"fraction must be between 0 and 1, got {fraction!r}")
        return self._map(SampleRows(float(fraction), seed_of(seed)), "RandomSample", columns_after=list)

    def _known_columns(self, cols, what: str) -> list:
        cols = [cols] if isinstance(cols, str) else list(cols)
        names = _plan.known_columns(self._logical_plan)
        if names is None and isinstance(self._logical_plan, _plan.InputData):
            names = self.columns()
        _blocks.check_columns(cols, names, what)  # raises, naming the closest column
        return cols

    # -- moving rows between blocks ------------------------------------------------------

    def _all_to_all(self, run, label: str, *others: Dataset, columns_after=None) -> Dataset:
        inputs = (self._logical_plan, *(o._logical_plan for o in others))
        return Dataset(_plan.AllToAll(inputs, run, label, columns_after=columns_after))

    def repartition(self, num_blocks: int, *, shuffle: bool = False) -> Dataset:
        """The same rows in ``num_blocks`` blocks of near-equal size.

        ``shuffle=False`` keeps row order (each output block takes a contiguous range);
        ``shuffle=True`` deals rows round-robin from every input block into every
        output block (an all-to-all exchange; order is not kept).
        """
        check_positive(num_blocks, "num_blocks")
        if shuffle:
            return self._all_to_all(_shuffle.Deal(num_blocks, None), "Repartition", columns_after=list)
        return self._all_to_all(_shuffle.Repartition(num_blocks), "Repartition", columns_after=list)

    def random_shuffle(self, *, seed: int | None = None, num_blocks: int | None = None) -> Dataset:
        """The rows in random order: each block deals its rows to random output blocks,
        which shuffle what they receive (``seed`` makes it repeatable)."""
        if num_blocks is not None:
            check_positive(num_blocks, "num_blocks")
        return self._all_to_all(_shuffle.Deal(num_blocks, seed_of(seed)), "RandomShuffle", columns_after=list)

    def randomize_block_order(self, *, seed: int | None = None) -> Dataset:
        """The same blocks in random order (rows within a block keep theirs)."""
        return self._all_to_all(_shuffle.RandomizeBlocks(seed_of(seed)), "RandomizeBlockOrder", columns_after=list)

    def limit(self, limit: int) -> Dataset:
        """The first ``limit`` rows (upstream work stops once they are there)."""
        if not isinstance(limit, int) or limit < 0:
            raise ValueError(f"limit must be a non-negative int, got {limit!r}")
        return Dataset(_plan.Limit(self._logical_plan, limit))

    def _row_range_datasets(self, ranges: list[tuple[int, int]]) -> list[MaterializedDataset]:
        bundles = self._materialized_bundles()
        return [_materialized([b]) for b in _shuffle.resolve(_shuffle.row_ranges(bundles, ranges))]

    def split(self, n: int, *, equal: bool = False, locality_hints=None) -> list[MaterializedDataset]:
        """``n`` Datasets of contiguous, near-equal row ranges (one block each); with
        ``equal=True`` each gets exactly ``count() // n`` rows and the rest are dropped."""
        check_positive(n, "n")
        if locality_hints is not None:
            raise ValueError("split(locality_hints=...) is not supported: blocks are read from any node")
        total = self.count()
        ranges = ([(i * (total // n), (i + 1) * (total // n)) for i in range(n)] if equal
                  else _shuffle.even_ranges(total, n))
        return self._row_range_datasets(ranges)

    def split_at_indices(self, indices: list[int]) -> list[MaterializedDataset]:
        """``len(indices) + 1`` Datasets: rows ``[0, indices[0])``, ``[indices[0],
        indices[1])``, ... (indices past the end give empty Datasets)."""
        materialized = self.materialize()
        return materialized._row_range_datasets(_sort.index_ranges(indices, materialized.count()))

    def split_proportionately(self, proportions: list[float]) -> list[MaterializedDataset]:
        """``len(proportions) + 1`` Datasets, the i-th with ``proportions[i]`` of the
        rows (the last takes the rest); every split gets at least one row."""
        materialized = self.materialize()
        return materialized.split_at_indices(_sort.proportion_indices(proportions, materialized.count()))

    def train_test_split(self, test_size: float | int, *, shuffle: bool = False,
                         seed: int | None = None) -> tuple[MaterializedDataset, MaterializedDataset]:
        """``(train, test)``: ``test_size`` a fraction in (0, 1) or a row count; the
        test rows are the last ones (after a ``random_shuffle(seed=)`` if ``shuffle``)."""
        ds = (self.random_shuffle(seed=seed) if shuffle else self).materialize()
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
        counts = [_plan.known_num_rows(d._logical_plan) for d in (self, *others)]
        if None not in counts and len(set(counts)) > 1:  # else checked when it runs
            raise ValueError(
                f"zip needs datasets with the same number of rows, got {counts}; "
                "use limit() or split_at_indices() to match them"
            )
        return self._all_to_all(_shuffle.Zip(), "Zip", *others)

    def union(self, *others: Dataset) -> Dataset:
        """This dataset's rows followed by the others' (no data moves)."""
        for other in others:
            if not isinstance(other, Dataset):
                raise TypeError(f"union takes Datasets, got {type(other).__name__}")
        return Dataset(_plan.Union((self._logical_plan, *(o._logical_plan for o in others))))

    # -- consuming ---------------------------------------------------------------------

    def _blocks_in_order(self, prefetch: int = 0) -> Iterator[Any]:
        """The output blocks, in order. With ``prefetch`` > 0 a helper thread runs the
        executor and fetches up to that many blocks ahead while the caller works."""
        if prefetch == 0:
            with contextlib.closing(self._stream()) as stream:
                for bundle in stream:
                    yield ray.get(bundle.block_ref)
            return
        yield from Prefetcher(self._execution(), prefetch)

    def iter_rows(self, *, prefetch_batches: int = 1) -> Iterator[dict]:
        """Every row as a dict, in order (``prefetch_batches`` blocks are fetched ahead)."""
        # closing(): an abandoned iteration stops its helper thread now, not at GC.
        with contextlib.closing(self._blocks_in_order(check_prefetch(prefetch_batches))) as blocks:
            for block in blocks:
                yield from _blocks.iter_rows(block)

    def iter_batches(
        self,
        *,
        batch_size: int | None = 256,
        batch_format: str | None = "default",
        drop_last: bool = False,
        prefetch_batches: int = 1,
    ) -> Iterator[Any]:
        """Batches of ``batch_size`` rows across block boundaries (None: one per block),
        while the executor keeps computing the next blocks; ``prefetch_batches``
        blocks beyond the current one are fetched to this node ahead of time."""
        _blocks.check_batch_format(batch_format)
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
            raise ValueError(f"batch_size must be a positive int or None, got {batch_size!r}")
        buffer, offset = None, 0  # rows before ``offset`` in ``buffer`` were yielded
        # closing(): an abandoned iteration stops its helper thread now, not at GC.
        with contextlib.closing(self._blocks_in_order(check_prefetch(prefetch_batches))) as blocks:
            for block in blocks:
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
                del block
        if buffer is not None and _blocks.num_rows(buffer) > offset and not drop_last:
            piece = _blocks.slice_block(buffer, offset, _blocks.num_rows(buffer))
            yield _consumer_batch(piece, batch_format)

    def iter_torch_batches(
        self,
        *,
        batch_size: int | None = 256,
        dtypes=None,
        device: str = "auto",
        collate_fn: Callable | None = None,
        drop_last: bool = False,
        prefetch_batches: int = 1,
    ) -> Iterator[Any]:
        """``iter_batches`` with each column as a ``torch.Tensor`` (``dtypes``: one
        torch dtype or ``{column: dtype}``; ``device``: ``"auto"`` is CUDA when torch
        sees a GPU, else CPU). ``collate_fn(batch)`` instead turns each numpy batch
        into whatever it returns."""
        try:
            import torch
        except ImportError as e:
            raise ImportError("Dataset.iter_torch_batches needs torch: pip install torch") from e
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        for batch in self.iter_batches(batch_size=batch_size, batch_format="numpy", drop_last=drop_last,
                                       prefetch_batches=prefetch_batches):
            if collate_fn is not None:
                yield collate_fn(batch)
                continue
            # Arrays read from the store are read-only; torch needs memory it may write.
            yield {
                name: torch.as_tensor(values if values.flags.writeable else np.array(values),
                                      dtype=dtypes.get(name) if isinstance(dtypes, dict) else dtypes, device=device)
                for name, values in batch.items()
            }

    def take(self, limit: int = 20) -> list[dict]:
        """The first ``limit`` rows (only as much of the plan runs as they need)."""
        rows: list[dict] = []
        for block in self.limit(limit)._blocks_in_order():
            rows.extend(_blocks.iter_rows(block))
        return rows[:limit]

    def take_all(self, limit: int | None = None) -> list[dict]:
        """Every row; raises ValueError if there are more than ``limit``."""
        rows = []
        for row in self.iter_rows():
            rows.append(row)
            if limit is not None and len(rows) > limit:
                raise ValueError(
                    f"take_all: the dataset has more than limit={limit} rows; "
                    "raise the limit or use iter_batches()/take()"
                )
        return rows

    def take_batch(self, batch_size: int = 20, *, batch_format: str | None = "default"):
        batch = next(self.limit(batch_size).iter_batches(batch_size=batch_size, batch_format=batch_format), None)
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
        # Checked here where the columns are known without running anything; else in the tasks.
        _blocks.check_columns([c for agg in aggs for c in agg.columns()],
                              _plan.known_columns(self._logical_plan), "aggregate")
        return tuple(aggs)

    def aggregate(self, *aggs: AggregateFn) -> dict:
        """``{agg.name: result}`` over the whole dataset: each block is folded in the
        task that makes it (fused), the driver merges the accumulators."""
        aggs = self._checked_aggs(aggs)
        folded = self._map(_Accumulate(aggs), "Aggregate")
        per_block = [row["accumulators"] for block in folded._blocks_in_order() for row in block]
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
        if on is None:
            return list(self.columns() or [])
        columns = [on] if isinstance(on, str) else list(on)
        # Checked now where the columns are known without running the plan; else by
        # the tasks, with the same message.
        _blocks.check_columns(columns, _plan.known_columns(self._logical_plan), what)
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
        """The distinct values of ``column``, in sorted order (null last)."""
        self._aggregate_columns([column], "unique")
        return [row[column] for row in self.groupby(column).count().iter_rows()]

    # -- sort and groupby --------------------------------------------------------------

    def sort(self, key, descending=False, boundaries=None) -> Dataset:
        """The rows ordered by ``key`` (a column or a list), ascending unless
        ``descending`` (a bool, or one per column); nulls last. A distributed sort:
        every block sorts itself and offers key samples, the driver picks range
        boundaries, and one task per output block cuts its range out of every sorted
        block and sorts it. ``boundaries`` (optional, Ray's spelling) gives the
        partition boundaries instead: key values (tuples for several columns)."""
        sort_key = _sort.SortKey.of(key, descending)
        sort_key.check_columns(_plan.known_columns(self._logical_plan), "sort")
        given = tuple(_sort.given_boundaries(boundaries, sort_key)) if boundaries is not None else None
        return self._all_to_all(_shuffle.Sort(sort_key, given), "Sort", columns_after=list)

    def groupby(self, key, num_partitions: int | None = None) -> GroupedData:
        """Group rows by ``key`` (a column, a list of them, or None for one group of
        every row); aggregate with ``count``/``sum``/``min``/``max``/``mean``/``std``/
        ``aggregate`` or transform with ``map_groups``."""
        return GroupedData(self, key, num_partitions=num_partitions)

    # -- conversion and output ---------------------------------------------------------

    def to_pandas(self, limit: int | None = None):
        """All rows as one pandas DataFrame (index 0..n-1)."""
        pd = _blocks.require_pandas("Dataset.to_pandas")
        frames, rows = [], 0
        for block in self._blocks_in_order():
            frames.append(_blocks.to_pandas_block(block))
            rows += len(frames[-1])
            if limit is not None and rows > limit:
                raise ValueError(
                    f"to_pandas: the dataset has more than limit={limit} rows; "
                    "raise the limit or use iter_batches()/take()"
                )
        frames = [f for f in frames if len(f)] or frames[:1]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def to_pandas_refs(self) -> list:
        """One ObjectRef of a pandas DataFrame per block (DataFrame blocks are not copied)."""
        _blocks.require_pandas("Dataset.to_pandas_refs")
        return [
            b.block_ref if b.metadata.block_format == _blocks.PANDAS else _tasks.to_pandas_task.remote(b.block_ref)
            for b in self._materialized_bundles()
        ]

    def to_arrow_refs(self) -> list:
        """One ObjectRef of a ``pyarrow.Table`` per block (Arrow blocks are not copied)."""
        _blocks.require_pyarrow("Dataset.to_arrow_refs")
        return [
            b.block_ref if b.metadata.block_format == _blocks.ARROW else _tasks.to_arrow_task.remote(b.block_ref)
            for b in self._materialized_bundles()
        ]

    def to_numpy_refs(self, *, column: str | None = None) -> list:
        """One ObjectRef per block: a dict of column -> ndarray, or the ``column`` array."""
        if column is not None:
            self._aggregate_columns([column], "to_numpy_refs")
        return [_tasks.to_numpy_task.remote(b.block_ref, column) for b in self._materialized_bundles()]

    def to_modin(self):
        """A ``modin.pandas.DataFrame`` whose row partitions are this dataset's blocks."""
        try:
            from modin.distributed.dataframe.pandas import from_partitions
        except ImportError as e:
            raise ImportError("Dataset.to_modin needs modin: pip install modin") from e
        return from_partitions(self.to_pandas_refs(), axis=0)

    def _write(self, path: str, fmt: str, suffix: str, options: dict, ray_remote_args: dict | None,
               concurrency: int | None) -> None:
        """One file per block under directory ``path`` (``<uuid>_<block index>``), each
        written by the task that makes the block (fused with the maps before it unless
        ``ray_remote_args``/``concurrency`` set it apart), streamed."""
        directory = _io.local_path(path)
        writer = _io.WriteBlocks(directory, uuid.uuid4().hex[:12], fmt, suffix, options)
        label = f"Write{fmt.capitalize()}"
        for _ in self._map(writer, label, ray_remote_args=ray_remote_args, concurrency=concurrency)._stream():
            pass

    def write_csv(self, path: str, *, ray_remote_args: dict | None = None, concurrency: int | None = None,
                  **pandas_kwargs) -> None:
        """One CSV file per block under directory ``path`` (written by tasks);
        keywords go to ``pandas.DataFrame.to_csv``."""
        self._write(path, "csv", "csv", pandas_kwargs, ray_remote_args, concurrency)

    def write_json(self, path: str, *, ray_remote_args: dict | None = None, concurrency: int | None = None,
                   **pandas_json_args) -> None:
        """One JSON lines file (``.json``, an object per row) per block under ``path``;
        keywords go to ``pandas.DataFrame.to_json`` (e.g. ``date_format="iso"``)."""
        self._write(path, "json", "json", pandas_json_args, ray_remote_args, concurrency)

    def write_parquet(self, path: str, *, ray_remote_args: dict | None = None, concurrency: int | None = None,
                      **arrow_parquet_args) -> None:
        """One Parquet file per block under ``path`` (needs pyarrow); keywords go to
        ``pyarrow.parquet.write_table`` (e.g. ``compression="zstd"``)."""
        _blocks.require_pyarrow("Dataset.write_parquet")
        self._write(path, "parquet", "parquet", arrow_parquet_args, ray_remote_args, concurrency)

    def write_numpy(self, path: str, *, column: str, ray_remote_args: dict | None = None,
                    concurrency: int | None = None) -> None:
        """Column ``column`` as one ``.npy`` file per block under ``path``."""
        self._aggregate_columns([column], "write_numpy")
        self._write(path, "numpy", "npy", {"column": column}, ray_remote_args, concurrency)


class MaterializedDataset(Dataset):
    """A Dataset whose blocks are computed and held in the object store."""


def _materialized(bundles: list[RefBundle]) -> MaterializedDataset:
    return MaterializedDataset(_plan.InputData(
        tuple(b.block_ref for b in bundles), tuple(b.metadata for b in bundles)
    ))


def from_blocks(blocks: list, label: str = "InputData") -> MaterializedDataset:
    """A Dataset of blocks built here (put into the store as they are)."""
    refs, metadata = [], []
    for block in blocks:
        block = _blocks.for_storage(block)
        refs.append(ray.put(block))
        metadata.append(_blocks.metadata_of(block))
    return MaterializedDataset(_plan.InputData(tuple(refs), tuple(metadata), label))


class _Accumulate:
    """The map side of ``Dataset.aggregate``: a one-row block of this block's
    accumulators (rows format: they are arbitrary Python values)."""

    def __init__(self, aggs: tuple):
        self.aggs = aggs

    def __call__(self, block):
        group = _blocks.Group(block, 0, _blocks.num_rows(block))
        return [{"accumulators": [agg.accumulate_group(agg.init(None), group) for agg in self.aggs]}]


def _fn_name(fn) -> str:
    name = getattr(fn, "__name__", None) or type(fn).__name__
    return name


def _consumer_batch(block, batch_format):
    # A map_batches batch keeps its block's index (Modin's partitions carry their
    # DataFrame's index through to_modin); a consumer's pandas batch counts from 0.
    batch = _blocks.to_batch(block, batch_format)
    return batch.reset_index(drop=True) if batch_format == "pandas" else batch
