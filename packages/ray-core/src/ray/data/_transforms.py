"""Per-block transforms: what ``map``/``filter``/``flat_map``/``map_batches`` run on
each block inside a ray task (or actor). Pure callables ``block -> block``; the
user's function travels inside them (cloudpickle)."""

from __future__ import annotations

import contextvars
import copy
import dataclasses
import inspect
from collections.abc import Callable

import numpy as np

from ray.data import _blocks, _sort

# The position of the running task's block in its operator (0, 1, ...), set by the
# task around its transforms: write tasks name their files by it, random_sample
# seeds by it.
TASK_INDEX: contextvars.ContextVar[int] = contextvars.ContextVar("ray_data_task_index", default=0)


def _describe(fn) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__


@dataclasses.dataclass(frozen=True, kw_only=True)
class UserFunction:
    """The user's function (or callable-class instance) and its extra arguments."""

    fn: Callable | None  # None until an actor puts its instance of a callable class in
    fn_args: tuple = ()
    fn_kwargs: dict = dataclasses.field(default_factory=dict)

    def call(self, value):
        return self.fn(value, *self.fn_args, **self.fn_kwargs)

    def with_instance(self, instance):
        return dataclasses.replace(self, fn=instance)


@dataclasses.dataclass(frozen=True, kw_only=True)
class MapRows(UserFunction):
    def __call__(self, block):
        rows = []
        for row in _blocks.iter_rows(block):
            result = self.call(row)
            if not isinstance(result, dict):
                raise TypeError(
                    f"the function given to Dataset.map ({_describe(self.fn)}) must return one "
                    f"row as a dict, got {type(result).__name__}; use flat_map to return "
                    "several rows"
                )
            rows.append(result)
        return _blocks.build_block(rows)


@dataclasses.dataclass(frozen=True, kw_only=True)
class FilterRows(UserFunction):
    def __call__(self, block):
        # Filtering the block itself keeps its columns and types, even when empty.
        keep = np.fromiter((bool(self.call(row)) for row in _blocks.iter_rows(block)), dtype=bool,
                           count=_blocks.num_rows(block))
        return _blocks.filter_rows(block, keep)


@dataclasses.dataclass(frozen=True)
class FilterExpression:
    """``filter(expr=...)``: the rows where an Arrow expression is true, evaluated by
    Arrow compute on the block as a table (nulls count as false)."""

    expression: object  # pyarrow.compute.Expression

    def __call__(self, block):
        table = _blocks.to_arrow_block(block)
        try:
            return table.filter(self.expression)
        except Exception as e:  # noqa: BLE001 - Arrow's error names the column or type: pass it on
            raise ValueError(f"filter(expr={self.expression}) failed on a block with columns "
                             f"{table.column_names}: {e}") from None


@dataclasses.dataclass(frozen=True, kw_only=True)
class FlatMapRows(UserFunction):
    def __call__(self, block):
        rows = []
        for row in _blocks.iter_rows(block):
            results = self.call(row)
            if isinstance(results, dict) or not hasattr(results, "__iter__"):
                raise TypeError(
                    f"the function given to Dataset.flat_map ({_describe(self.fn)}) must return "
                    f"a list (or iterable) of dict rows, got {type(results).__name__}"
                )
            rows.extend(results)
        return _blocks.build_block(rows)


@dataclasses.dataclass(frozen=True, kw_only=True)
class MapBatches(UserFunction):
    """Cut the block into batches of ``batch_size`` rows (None: the whole block), call
    ``fn`` on each in ``batch_format``, and join what it returns (or yields)."""

    batch_size: int | None = None
    batch_format: str | None = "default"
    zero_copy_batch: bool = False

    def __call__(self, block):
        size = _blocks.num_rows(block)
        step = self.batch_size or max(size, 1)
        outputs = []
        for start in range(0, size, step):
            piece = _blocks.slice_block(block, start, start + step)
            outputs.extend(_call_on_batch(self, piece, self.batch_format, self.zero_copy_batch))
        if not outputs:  # an empty block: keep its columns
            return block
        return _blocks.concat_blocks(outputs)


def _call_on_batch(fn: UserFunction, piece, batch_format, zero_copy_batch: bool) -> list:
    """The blocks ``fn`` returns (or yields) for ``piece`` given as a ``batch_format`` batch."""
    batch = _blocks.to_batch(piece, batch_format)
    if not zero_copy_batch:
        batch = _writable_copy(batch)
    result = fn.call(batch)
    results = result if inspect.isgenerator(result) else [result]
    return [_blocks.block_from_batch(r) for r in results]


@dataclasses.dataclass(frozen=True)
class SelectColumns:
    """Only ``columns``, in that order (``select_columns``; ``drop_columns`` keeps the
    rest, named by ``dropped`` and resolved per block)."""

    columns: tuple
    dropped: tuple = ()

    def __call__(self, block):
        if self.dropped:
            kept = [c for c in _blocks.column_names(block) if c not in self.dropped]
            return _blocks.select_columns(block, kept)
        missing = [c for c in self.columns if c not in _blocks.column_names(block)]
        if missing and _blocks.num_rows(block):
            _blocks.check_columns(missing, _blocks.column_names(block), "select_columns")
        if missing:
            return block
        return _blocks.select_columns(block, self.columns)


@dataclasses.dataclass(frozen=True)
class AddColumn:
    """The batch function behind ``Dataset.add_column``."""

    column: str
    fn: Callable

    def __call__(self, batch):
        values = self.fn(batch)
        if _blocks.is_pandas(batch):
            return batch.assign(**{self.column: values})
        if isinstance(batch, dict):
            return {**batch, self.column: values}
        values = values if hasattr(values, "type") else _pa_array(values)
        if self.column in batch.column_names:
            return batch.set_column(batch.column_names.index(self.column), self.column, values)
        return batch.append_column(self.column, values)


def _pa_array(values):
    return _blocks.require_pyarrow("add_column on pyarrow batches").array(values)


def _writable_copy(batch):
    # Blocks read from the shared-memory store are read-only: the copy lets a user
    # function change its batch in place, as it may with Ray's zero_copy_batch=False.
    # Arrow tables are immutable: nothing to copy.
    if isinstance(batch, dict):
        return {name: np.array(column, copy=True) for name, column in batch.items()}
    if _blocks.accessor_format(batch) == _blocks.ARROW:
        return batch
    if hasattr(batch, "copy"):
        return batch.copy()
    return copy.deepcopy(batch)


# -- per group: the blocks here are sorted by the group key (see ``_sort``) ------------


def _python_values(values: np.ndarray) -> list:
    # Dates stay numpy scalars: tolist() would turn datetime64[ns] into int nanoseconds.
    return list(values) if values.dtype.kind in "mM" else values.tolist()


@dataclasses.dataclass(frozen=True)
class AggregateGroups:
    """One output row per run of equal keys: the key columns, then each aggregation."""

    key_columns: tuple
    aggs: tuple

    def __call__(self, block):
        arrays: dict = {}
        groups = [_blocks.Group(block, start, end, arrays) for start, end in _sort.key_runs(block, self.key_columns)]
        starts = np.array([g.start for g in groups], dtype=np.int64)
        key_arrays = [_blocks.column_array(block, c)[starts] for c in self.key_columns]
        key_lists = [_python_values(a) for a in key_arrays]
        keys = key_lists[0] if len(key_lists) == 1 else list(zip(*key_lists))
        # The key columns keep their dtypes (numpy arrays) unless blocks are rows.
        as_frame = _blocks.default_format() != _blocks.ROWS
        columns = {c: a if as_frame else v for c, a, v in zip(self.key_columns, key_arrays, key_lists)}
        for agg in self.aggs:
            columns[agg.name] = [agg.finalize(acc) for acc in agg.accumulate_runs(groups, keys)]
        return _blocks.build_block_from_columns(columns, len(groups))


@dataclasses.dataclass(frozen=True, kw_only=True)
class MapGroups(UserFunction):
    """``fn`` on each group (in ``batch_format``); what it returns, joined."""

    key_columns: tuple
    batch_format: str | None = "default"
    zero_copy_batch: bool = True

    def __call__(self, block):
        outputs = []
        runs = _sort.key_runs(block, self.key_columns) if self.key_columns else [(0, _blocks.num_rows(block))]
        for start, end in runs:
            piece = _blocks.slice_block(block, start, end)
            if _blocks.is_pandas(piece):
                piece = piece.reset_index(drop=True)
            outputs.extend(_call_on_batch(self, piece, self.batch_format, self.zero_copy_batch))
        return _blocks.concat_blocks(outputs) if outputs else _blocks.build_block([])


@dataclasses.dataclass(frozen=True)
class RenameColumns:
    mapping: tuple  # (old, new) pairs

    def __call__(self, block):
        return _blocks.rename_columns(block, dict(self.mapping))


@dataclasses.dataclass(frozen=True)
class SampleRows:
    """Each row kept with probability ``fraction`` (Bernoulli; seeded by ``seed`` and
    the block's position)."""

    fraction: float
    seed: int

    def __call__(self, block):
        rng = np.random.default_rng([self.seed, TASK_INDEX.get()])
        return _blocks.filter_rows(block, rng.random(_blocks.num_rows(block)) < self.fraction)
