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

import functools
import importlib
import numbers
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

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
    return pd.DataFrame({name: _column_for_pandas(vals) for name, vals in columns.items()})


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


# -- aggregation ----------------------------------------------------------------------


@dataclass(frozen=True)
class ColumnPartial:
    """One block's share of sum/min/max/mean over one column."""

    count: int  # non-null values
    nulls: int
    sum: Any
    min: Any
    max: Any

    def merge(self, other: ColumnPartial) -> ColumnPartial:
        return ColumnPartial(
            self.count + other.count,
            self.nulls + other.nulls,
            _combine(self.sum, other.sum, lambda a, b: a + b),
            _combine(self.min, other.min, min),
            _combine(self.max, other.max, max),
        )


def _combine(a, b, op):
    if a is None:
        return b
    if b is None:
        return a
    return op(a, b)


def _is_null(value) -> bool:
    if value is None:
        return True
    try:
        return bool(value != value)  # NaN, NaT
    except (TypeError, ValueError):
        return False


def _python_scalar(value):
    return value.item() if isinstance(value, np.generic) else value


def column_values(block, column) -> list:
    names = list(block.columns) if is_pandas(block) else _ordered_keys(block)
    if num_rows(block) and column not in names:
        raise KeyError(column)
    if is_pandas(block):
        return block[column].tolist() if column in block.columns else []
    return [row.get(column) for row in block]


def partial_aggregate(block, columns: list) -> dict:
    """column -> ColumnPartial for this block."""
    partials = {}
    for column in columns:
        if is_pandas(block) and column in block.columns and block[column].dtype.kind in "biuf":
            partials[column] = _numeric_series_partial(block[column])
            continue
        values = column_values(block, column)
        present = [_python_scalar(v) for v in values if not _is_null(v)]
        if present and not all(isinstance(v, (numbers.Number, np.number)) for v in present):
            kinds = sorted({type(v).__name__ for v in present})
            raise TypeError(f"column {column!r} is not numeric (holds {', '.join(kinds)})")
        partials[column] = ColumnPartial(
            count=len(present),
            nulls=len(values) - len(present),
            sum=sum(present) if present else None,
            min=min(present) if present else None,
            max=max(present) if present else None,
        )
    return partials


def _numeric_series_partial(series) -> ColumnPartial:
    # Vectorized: a numeric pandas column never holds anything but numbers and NaN.
    present = series.dropna()
    if not len(present):
        return ColumnPartial(0, len(series), None, None, None)
    return ColumnPartial(
        count=len(present),
        nulls=len(series) - len(present),
        sum=_python_scalar(present.sum()),
        min=_python_scalar(present.min()),
        max=_python_scalar(present.max()),
    )
