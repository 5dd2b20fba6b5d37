"""Blocks: the tables a Dataset keeps in the object store, one ObjectRef each.

A block is a table of rows with named columns. Where pandas is importable, blocks
built here are ``pandas.DataFrame``; without pandas they are ``list``s of ``dict``
rows. Every function takes either form (and a DataFrame a user or Modin put in the
store), so the rest of ``ray.data`` never asks which one it holds. Batches handed
to user code are the formats Ray Data documents: ``"numpy"`` (a dict of column name
to ``numpy.ndarray``; also ``"default"``), ``"pandas"`` and ``"pyarrow"``.

Pure functions, no ray: the tasks in ``_tasks`` call them on workers, the tests
call them directly.
"""

from __future__ import annotations

import difflib
import functools
import importlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

BATCH_FORMATS = ("default", "numpy", "pandas", "pyarrow", None)


@functools.cache
def _optional_module(name: str):
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def pandas_or_none():
    """pandas if it is importable here, else None (pandas is optional for ray-core)."""
    return _optional_module("pandas")


def require_pandas(what: str):
    pd = pandas_or_none()
    if pd is None:
        raise ImportError(f"{what} needs pandas, which is not installed here: pip install pandas")
    return pd


def require_pyarrow(what: str):
    pa = _optional_module("pyarrow")
    if pa is None:
        raise ImportError(f"{what} needs pyarrow, which is not installed here: pip install pyarrow")
    return pa


def is_pandas(block) -> bool:
    pd = pandas_or_none()
    return pd is not None and isinstance(block, pd.DataFrame)


# -- schema and metadata -------------------------------------------------------------


@dataclass(frozen=True)
class Schema:
    """Column names and type names of a Dataset (``ds.schema()``)."""

    names: tuple[str, ...]
    types: tuple[str, ...]

    def __repr__(self) -> str:
        width = max([len("Column"), *(len(str(n)) for n in self.names)])
        lines = [f"{'Column':<{width}}  Type", f"{'------':<{width}}  ----"]
        lines += [f"{str(n):<{width}}  {t}" for n, t in zip(self.names, self.types)]
        return "\n".join(lines)

    def as_braces(self) -> str:
        return "{" + ", ".join(f"{n}: {t}" for n, t in zip(self.names, self.types)) + "}"


@dataclass(frozen=True)
class BlockMetadata:
    """What the driver knows about a block without fetching it."""

    num_rows: int
    schema: Schema | None  # None: no columns known (an empty list-of-rows block)
    is_pandas: bool  # a pandas.DataFrame (else a list of dict rows)


_PY_TYPE_NAMES = {bool: "bool", int: "int64", float: "double", str: "string", bytes: "binary"}


def _type_name(value) -> str:
    if isinstance(value, np.ndarray):
        return f"ndarray(shape={value.shape}, dtype={value.dtype})"
    if isinstance(value, np.generic):
        return str(value.dtype)
    return _PY_TYPE_NAMES.get(type(value), type(value).__name__)


def schema_of(block) -> Schema | None:
    if is_pandas(block):
        return Schema(tuple(block.columns), tuple(str(t) for t in block.dtypes))
    names: dict[str, str] = {}
    for row in block:
        for name, value in row.items():
            if names.get(name) in (None, "null"):
                names[name] = "null" if value is None else _type_name(value)
    if not names:
        return None
    return Schema(tuple(names), tuple(names.values()))


def metadata_of(block) -> BlockMetadata:
    if not (is_pandas(block) or isinstance(block, list)):
        raise TypeError(
            f"a ray.data block must be a pandas.DataFrame or a list of dict rows, got "
            f"{type(block).__name__}; build datasets with ray.data.from_pandas/from_items/..."
        )
    return BlockMetadata(num_rows(block), schema_of(block), is_pandas(block))


# -- building and reading blocks ------------------------------------------------------


def _as_column(values):
    """A column for a DataFrame: multi-dimensional arrays become one ndarray per row."""
    values = np.asarray(values) if not isinstance(values, np.ndarray) else values
    return list(values) if values.ndim > 1 else values


def build_block(rows: list[dict]):
    """A block holding ``rows`` (dicts) in this process's preferred format."""
    pd = pandas_or_none()
    if pd is None:
        return [dict(r) for r in rows]
    if not rows:
        return pd.DataFrame()
    columns = {name: [row.get(name) for row in rows] for name in _ordered_keys(rows)}
    return build_block_from_columns(columns, len(rows))


def build_block_from_columns(columns: dict[str, list], count: int):
    """A block of ``count`` rows from equal-length lists of values, one per column."""
    pd = pandas_or_none()
    if pd is None:
        return [{name: values[i] for name, values in columns.items()} for i in range(count)]
    return pd.DataFrame({
        name: vals if isinstance(vals, np.ndarray) else _column_for_pandas(vals) for name, vals in columns.items()
    })


def _ordered_keys(rows: list[dict]) -> list:
    keys: dict = {}
    for row in rows:
        if not isinstance(row, dict):
            raise TypeError(
                f"rows must be dicts (column name -> value), got {type(row).__name__}: {row!r:.80}"
            )
        keys.update(dict.fromkeys(row))
    return list(keys)


def _column_for_pandas(values: list):
    # A column of arrays (tensors) stays one ndarray per row: pandas would try to
    # broadcast them otherwise.
    if values and all(isinstance(v, np.ndarray) for v in values):
        column = np.empty(len(values), dtype=object)
        column[:] = values
        return column
    return values


def block_from_batch(batch):
    """A block from what a ``map_batches`` function returned."""
    pd = pandas_or_none()
    if pd is not None and isinstance(batch, pd.DataFrame):
        return batch
    pa = _optional_module("pyarrow")
    if pa is not None and isinstance(batch, pa.Table):
        return batch.to_pandas() if pd is not None else batch.to_pylist()
    if isinstance(batch, dict):
        lengths = {name: len(_as_sized(v)) for name, v in batch.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"the columns of a batch must have equal lengths, got {lengths}")
        if pd is not None:
            return pd.DataFrame({name: _as_column(_as_sized(v)) for name, v in batch.items()})
        count = next(iter(lengths.values()), 0)
        return [{name: _as_sized(v)[i] for name, v in batch.items()} for i in range(count)]
    raise TypeError(
        f"a map_batches function must return a dict of column name -> array, a "
        f"pandas.DataFrame or a pyarrow.Table, got {type(batch).__name__}"
    )


def _as_sized(values):
    return values if hasattr(values, "__len__") else list(values)


def num_rows(block) -> int:
    return len(block)


def iter_rows(block) -> Iterator[dict]:
    if is_pandas(block):
        yield from block.to_dict("records")
    else:
        yield from (dict(row) for row in block)


def slice_block(block, start: int, end: int):
    return block.iloc[start:end] if is_pandas(block) else block[start:end]


def take_rows(block, indices):
    """The rows at positions ``indices`` (an integer array), in that order."""
    if is_pandas(block):
        return block.iloc[indices].reset_index(drop=True)
    return [block[i] for i in indices]


def concat_blocks(blocks: list):
    """One block of all ``blocks`` in order (a fresh 0..n-1 index for DataFrames)."""
    blocks = [b for b in blocks if num_rows(b)] or blocks[:1]
    if not blocks:
        return build_block([])
    if len(blocks) == 1:
        return blocks[0]
    if any(is_pandas(b) for b in blocks):
        pd = pandas_or_none()
        frames = [b if is_pandas(b) else build_block(b) for b in blocks]
        return pd.concat(frames, ignore_index=True)
    return [row for block in blocks for row in block]


def to_pandas_block(block):
    if is_pandas(block):
        return block
    pd = require_pandas("converting a dataset to pandas")
    return build_block(block) if block else pd.DataFrame()


# -- batches --------------------------------------------------------------------------


def check_batch_format(batch_format) -> None:
    if batch_format not in BATCH_FORMATS:
        raise ValueError(
            f"batch_format must be one of {BATCH_FORMATS}, got {batch_format!r}"
        )


def to_batch(block, batch_format):
    """``block`` in ``batch_format`` ("default"/"numpy": dict of ndarrays)."""
    check_batch_format(batch_format)
    if batch_format is None:
        return block
    if batch_format == "pandas":
        return to_pandas_block(block)
    if batch_format == "pyarrow":
        pa = require_pyarrow('batch_format="pyarrow"')
        if is_pandas(block):
            return pa.Table.from_pandas(block, preserve_index=False)
        return pa.Table.from_pylist(block)
    return to_numpy_dict(block)


def to_numpy_dict(block) -> dict[str, np.ndarray]:
    if is_pandas(block):
        return {name: _stack(block[name].to_numpy()) for name in block.columns}
    names = _ordered_keys(block)
    return {name: _stack([row.get(name) for row in block]) for name in names}


def _stack(values) -> np.ndarray:
    """A column as one ndarray; a column of equal-shaped arrays becomes one tensor."""
    if isinstance(values, np.ndarray) and values.dtype != object:
        return values
    values = list(values)
    if values and all(isinstance(v, np.ndarray) for v in values):
        if len({v.shape for v in values}) == 1:
            return np.stack(values)
    if any(isinstance(v, (list, tuple, dict, np.ndarray)) for v in values):
        column = np.empty(len(values), dtype=object)  # ragged or nested: one object per row
        column[:] = values
        return column
    return np.array(values)


# -- columns and groups (what sort, groupby and aggregates read) -----------------------


def check_columns(columns, names: list | None, what: str) -> None:
    """Raise a ValueError naming the available columns (and the closest one) for the
    first of ``columns`` not in ``names``; no names known (an empty dataset) passes."""
    for column in columns:
        if names and column not in names:
            close = difflib.get_close_matches(str(column), [str(n) for n in names], n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"{what}: no column {column!r} in this dataset (columns: {names}).{hint}")


def column_names(block) -> list:
    return list(block.columns) if is_pandas(block) else _ordered_keys(block)


def column_array(block, name) -> np.ndarray:
    """Column ``name`` as one numpy array; nulls in an object column become None (so
    ``==`` between two of them is a plain bool, as pandas' ``NA`` is not)."""
    if name not in column_names(block):
        if not num_rows(block):
            return np.empty(0, dtype=object)
        raise ValueError(f"no column {name!r} in this block (columns: {column_names(block)})")
    if is_pandas(block):
        values = block[name].to_numpy()
    else:
        values = np.empty(len(block), dtype=object)
        values[:] = [row.get(name) for row in block]
        if len(values) and not any(isinstance(v, (np.ndarray, list, dict)) for v in values):
            values = _tighten(values)
    if values.dtype == object:
        nulls = null_mask(values)
        if nulls.any():
            values = values.copy()
            values[nulls] = None
    return values


def _tighten(values: np.ndarray) -> np.ndarray:
    # A column of plain numbers (no None) gets a numeric dtype, as pandas would give it.
    try:
        tight = np.array(values.tolist())
    except (TypeError, ValueError):
        return values
    return tight if tight.dtype.kind in "biuf" and tight.shape == values.shape else values


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
