"""Blocks: the tables a Dataset keeps in the object store, one ObjectRef each.

A block is a table of rows with named columns in one of three formats (see
``_formats``): a ``pyarrow.Table`` (the default), a ``pandas.DataFrame`` or a list of
dict rows. The functions here take any of them, so the rest of ``ray.data`` never
asks which one it holds; new blocks are Arrow tables where pyarrow is installed, and
pandas (or rows) are kept for frames users hand over and converted at the edges.
Batches handed to user code are the formats Ray Data documents: ``"numpy"`` (a dict
of column name to ``numpy.ndarray``; also ``"default"``), ``"pandas"`` and
``"pyarrow"``.

Pure functions, no ray: the tasks in ``_tasks`` call them on workers, the tests
call them directly.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ray.data._formats import (  # noqa: F401 - re-exported for the other modules
    ARROW,
    PANDAS,
    ROWS,
    BlockAccessor,
    NotArrowable,
    Schema,
    arrow_table,
    column_for_pandas,
    compact_arrow,
    default_format,
    ordered_keys,
    pandas_or_none,
    pyarrow_or_none,
    require_pandas,
    require_pyarrow,
)

__all__ = [
    "ARROW", "PANDAS", "ROWS", "BATCH_FORMATS", "BlockExecStats", "BlockMetadata", "Group",
    "Schema", "NotArrowable", "accessor", "pandas_or_none", "pyarrow_or_none",
    "require_pandas", "require_pyarrow",
]

BATCH_FORMATS = ("default", "numpy", "pandas", "pyarrow", None)


def accessor(block) -> BlockAccessor:
    return BlockAccessor.for_block(block)


def is_pandas(block) -> bool:
    return accessor(block).format == PANDAS


def block_format(block) -> str:
    return accessor(block).format


def accessor_format(value) -> str | None:
    """The block format of ``value``, or None when it is not a block."""
    try:
        return accessor(value).format
    except TypeError:
        return None


# -- metadata ------------------------------------------------------------------------


@dataclass(frozen=True)
class BlockExecStats:
    """How the task that made a block ran (what ``Dataset.stats()`` reports)."""

    wall_time_s: float
    cpu_time_s: float
    node_id: str
    task_id: str | None
    start_time_s: float  # time.time() when the task started


@dataclass(frozen=True)
class BlockMetadata:
    """What the driver knows about a block without fetching it."""

    num_rows: int
    size_bytes: int
    schema: Schema | None  # None: no columns known (an empty block)
    block_format: str  # "arrow", "pandas" or "rows"
    input_files: tuple[str, ...] = ()
    exec_stats: BlockExecStats | None = None

    @property
    def is_pandas(self) -> bool:
        return self.block_format == PANDAS


def metadata_of(block, *, input_files: tuple = (), exec_stats: BlockExecStats | None = None) -> BlockMetadata:
    acc = accessor(block)
    return BlockMetadata(acc.num_rows(), acc.size_bytes(), acc.schema(), acc.format, tuple(input_files), exec_stats)


def schema_of(block) -> Schema | None:
    return accessor(block).schema()


# -- building blocks -------------------------------------------------------------------


def empty_block():
    fmt = default_format()
    if fmt == ARROW:
        return pyarrow_or_none().table({})
    if fmt == PANDAS:
        return pandas_or_none().DataFrame()
    return []


def build_block(rows: list[dict]):
    """A block holding ``rows`` (dicts) in the default format."""
    if not rows:
        return empty_block()
    names = ordered_keys(rows)
    return build_block_from_columns({n: [row.get(n) for row in rows] for n in names}, len(rows))


def build_block_from_columns(columns: dict, count: int):
    """A block of ``count`` rows from equal-length columns (lists or arrays): Arrow
    where the values fit Arrow's types, else pandas, else rows."""
    fmt = default_format()
    if fmt == ARROW and columns:
        try:
            return arrow_table(columns)
        except NotArrowable:
            fmt = PANDAS if pandas_or_none() is not None else ROWS
    if fmt != ROWS and pandas_or_none() is not None:
        pd = pandas_or_none()
        if not columns:
            return pd.DataFrame(index=range(count))
        return pd.DataFrame({name: _pandas_column(values) for name, values in columns.items()})
    lists = {name: _as_list(values) for name, values in columns.items()}
    return [{name: values[i] for name, values in lists.items()} for i in range(count)]


def _pandas_column(values):
    if isinstance(values, np.ndarray):
        return list(values) if values.ndim > 1 else values
    return column_for_pandas(list(values))


def _as_list(values) -> list:
    if isinstance(values, np.ndarray):
        return list(values) if values.ndim > 1 else values.tolist() if values.dtype.kind not in "mMO" else list(values)
    return list(values)


def block_from_batch(batch):
    """A block from what a ``map_batches`` function returned: a DataFrame stays a
    pandas block, a ``pyarrow.Table`` an Arrow block, a dict of columns becomes a
    block in the default format."""
    pd = pandas_or_none()
    if pd is not None and isinstance(batch, pd.DataFrame):
        return batch
    pa = pyarrow_or_none()
    if pa is not None and isinstance(batch, pa.Table):
        return batch
    if isinstance(batch, dict):
        columns = {name: _as_sized(v) for name, v in batch.items()}
        lengths = {name: len(v) for name, v in columns.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"the columns of a batch must have equal lengths, got {lengths}")
        return build_block_from_columns(columns, next(iter(lengths.values()), 0))
    raise TypeError(
        f"a map_batches function must return a dict of column name -> array, a "
        f"pandas.DataFrame or a pyarrow.Table, got {type(batch).__name__}"
    )


def _as_sized(values):
    if isinstance(values, (np.ndarray, list)):
        return values
    pa = pyarrow_or_none()
    if pa is not None and isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    pd = pandas_or_none()
    if pd is not None and isinstance(values, pd.Series):
        return values.to_numpy()
    return values if hasattr(values, "__len__") else list(values)


def for_storage(block):
    """``block`` ready to be stored: an Arrow slice is compacted so it does not carry
    its parent's buffers into the object store."""
    pa = pyarrow_or_none()
    if pa is not None and isinstance(block, pa.Table):
        return compact_arrow(block)
    return block


# -- reading blocks --------------------------------------------------------------------


def num_rows(block) -> int:
    return accessor(block).num_rows()


def size_bytes(block) -> int:
    return accessor(block).size_bytes()


def iter_rows(block) -> Iterator[dict]:
    return accessor(block).iter_rows()


def slice_block(block, start: int, end: int):
    return accessor(block).slice(start, end)


def take_rows(block, indices):
    """The rows at positions ``indices`` (an integer array), in that order."""
    return accessor(block).take(np.asarray(indices, dtype=np.int64))


def filter_rows(block, mask):
    """The rows where ``mask`` (a bool array) is true."""
    return accessor(block).filter(np.asarray(mask, dtype=bool))


def select_columns(block, columns):
    return accessor(block).select(list(columns))


def rename_columns(block, mapping: dict):
    return accessor(block).rename(dict(mapping))


def column_names(block) -> list:
    return accessor(block).column_names()


def concat_blocks(blocks: list):
    """One block of all ``blocks`` in order (a fresh 0..n-1 index for DataFrames).
    Blocks of one format stay in it; mixed formats join as Arrow where they can,
    else as pandas, else as rows."""
    live = [b for b in blocks if num_rows(b)] or blocks[:1]
    if not live:
        return empty_block()
    if len(live) == 1:
        return live[0]
    formats = {block_format(b) for b in live}
    if formats == {ROWS}:
        return [row for block in live for row in block]
    if formats == {PANDAS}:
        return pandas_or_none().concat(live, ignore_index=True)
    if pyarrow_or_none() is not None:
        try:
            return _concat_arrow([accessor(b).to_arrow() for b in live])
        except NotArrowable:
            pass  # a pandas block holds values Arrow cannot: join as pandas below
    if pandas_or_none() is not None:
        return pandas_or_none().concat([to_pandas_block(b) for b in live], ignore_index=True)
    return [row for block in live for row in iter_rows(block)]


def _concat_arrow(tables: list):
    pa = pyarrow_or_none()
    try:
        return pa.concat_tables(tables, promote_options="default")
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        try:  # int64 + double and the like: widen
            return pa.concat_tables(tables, promote_options="permissive")
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
            raise NotArrowable(str(e)) from None


def to_pandas_block(block):
    return accessor(block).to_pandas()


def to_arrow_block(block):
    require_pyarrow("converting blocks to Arrow")
    try:
        return accessor(block).to_arrow()
    except NotArrowable as e:
        raise TypeError(
            f"this block cannot be an Arrow table ({e}); a column must hold values of one "
            "type: cast it first (map_batches), or use batch_format='pandas'"
        ) from None


def to_numpy_dict(block) -> dict[str, np.ndarray]:
    return accessor(block).to_numpy()


# -- batches --------------------------------------------------------------------------


def check_batch_format(batch_format) -> None:
    if batch_format not in BATCH_FORMATS:
        raise ValueError(f"batch_format must be one of {BATCH_FORMATS}, got {batch_format!r}")


def to_batch(block, batch_format):
    """``block`` in ``batch_format`` ("default"/"numpy": dict of ndarrays)."""
    check_batch_format(batch_format)
    if batch_format is None:
        return block
    if batch_format == "pandas":
        return to_pandas_block(block)
    if batch_format == "pyarrow":
        require_pyarrow('batch_format="pyarrow"')
        return to_arrow_block(block)
    return to_numpy_dict(block)


# -- columns and groups (what sort, groupby and aggregates read) -----------------------


def check_columns(columns, names: list | None, what: str) -> None:
    """Raise a ValueError naming the available columns (and the closest one) for the
    first of ``columns`` not in ``names``; no names known (an empty dataset) passes."""
    for column in columns:
        if names and column not in names:
            close = difflib.get_close_matches(str(column), [str(n) for n in names], n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"{what}: no column {column!r} in this dataset (columns: {list(names)}).{hint}")


def column_array(block, name) -> np.ndarray:
    """Column ``name`` as one numpy array; nulls in an object column become None (so
    ``==`` between two of them is a plain bool, as pandas' ``NA`` is not)."""
    acc = accessor(block)
    if name not in acc.column_names():
        if not acc.num_rows():
            return np.empty(0, dtype=object)
        check_columns([name], acc.column_names(), "column")
    values = acc.column(name)
    if values.dtype == object and values.ndim == 1:
        nulls = null_mask(values)
        if nulls.any():
            values = values.copy()
            values[nulls] = None
    return values


def null_mask(values: np.ndarray) -> np.ndarray:
    """True where ``values`` holds a null: None, NaN, NaT (or pandas' NA)."""
    kind = values.dtype.kind
    if kind in "fc":
        return np.isnan(values)
    if kind in "mM":
        return np.isnat(values)
    if kind != "O":
        return np.zeros(len(values), dtype=bool)
    pd = pandas_or_none()
    if pd is not None:
        return np.asarray(pd.isna(values), dtype=bool)
    return np.fromiter((is_null(v) for v in values), dtype=bool, count=len(values))


def python_scalar(value):
    """A numpy scalar as the Python value (``np.int64(3)`` -> ``3``); others as they
    are. Dates stay numpy: ``item()`` turns a datetime64[ns] into int nanoseconds."""
    if isinstance(value, np.generic) and not isinstance(value, (np.datetime64, np.timedelta64)):
        return value.item()
    return value


def is_null(value) -> bool:
    if value is None:
        return True
    if isinstance(value, (float, np.floating, np.datetime64, np.timedelta64)):
        return bool(value != value)  # NaN, NaT
    pd = pandas_or_none()
    return pd is not None and value is pd.NA


class Group:
    """Rows ``[start, end)`` of ``block``: what an aggregation folds in. Groups of one
    block share ``arrays`` so each column is converted to numpy once."""

    def __init__(self, block, start: int, end: int, arrays: dict | None = None):
        self._block, self.start, self.end = block, start, end
        self._arrays = {} if arrays is None else arrays

    @property
    def num_rows(self) -> int:
        return self.end - self.start

    def column(self, name) -> np.ndarray:
        return self.block_column(name)[self.start:self.end]

    def block_column(self, name) -> np.ndarray:
        """Column ``name`` of the whole block this group is part of."""
        if name not in self._arrays:
            self._arrays[name] = column_array(self._block, name)
        return self._arrays[name]

    def block(self):
        piece = slice_block(self._block, self.start, self.end)
        return piece.reset_index(drop=True) if is_pandas(piece) else piece

    def rows(self) -> Iterator[dict]:
        return iter_rows(slice_block(self._block, self.start, self.end))
