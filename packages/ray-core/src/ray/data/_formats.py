"""The three block formats behind one interface, ``BlockAccessor.for_block(block)``.

====================  ============================  ==========================================
format                block type                    when
====================  ============================  ==========================================
``"arrow"``           ``pyarrow.Table``             the default wherever pyarrow is installed
``"pandas"``          ``pandas.DataFrame``          frames users hand over (``from_pandas``,
                                                    Modin's partitions, a ``map_batches``
                                                    that returns a DataFrame), and values
                                                    Arrow cannot hold (a column mixing types)
``"rows"``            ``list`` of ``dict``          neither pyarrow nor pandas is installed
====================  ============================  ==========================================

Every operation the rest of ``ray.data`` needs (row counts, slices, takes, column
arrays, conversions to the batch formats) is a method here, so no other module asks
which format it holds. Arrow tables travel through the object store as pickle-5
out-of-band buffers and come back pointing into shared memory (no copy); a slice is
compacted before it is stored (``compact_arrow``), since pickling a slice of a table
would otherwise carry its parent's whole buffers.

Tensor columns (a numeric ndarray per row, all of one shape) are Arrow
``FixedShapeTensorArray``s; rows and numpy batches see them as ndarrays, pandas
batches as an object column of ndarrays.

Pure, no ray: tasks call these on workers, tests call them directly.
"""

from __future__ import annotations

import functools
import importlib
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

ARROW, PANDAS, ROWS = "arrow", "pandas", "rows"

# A slice whose buffers are this much bigger than its own bytes is copied before it is
# stored, so a small piece of a big block does not drag the block along.
_COMPACT_SLACK_BYTES = 1 << 20
_ROW_BATCH = 4096  # rows converted to Python objects at a time by iter_rows


@functools.cache
def _optional_module(name: str):
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def pandas_or_none():
    """pandas if it is importable here, else None (pandas is optional for ray-core)."""
    return _optional_module("pandas")


def pyarrow_or_none():
    """pyarrow if it is importable here, else None (``pip install ray-core[data]``)."""
    return _optional_module("pyarrow")


def require_pandas(what: str):
    pd = pandas_or_none()
    if pd is None:
        raise ImportError(f"{what} needs pandas, which is not installed here: pip install pandas")
    return pd


def require_pyarrow(what: str):
    pa = pyarrow_or_none()
    if pa is None:
        raise ImportError(f"{what} needs pyarrow, which is not installed here: pip install pyarrow")
    return pa


def default_format() -> str:
    """The format new blocks get: Arrow where pyarrow is installed, else pandas, else rows."""
    if pyarrow_or_none() is not None:
        return ARROW
    return PANDAS if pandas_or_none() is not None else ROWS


class NotArrowable(ValueError):
    """Values Arrow cannot hold as one column (mixed types, ragged tensors, objects)."""


# -- schema --------------------------------------------------------------------------


@dataclass(frozen=True)
class Schema:
    """Column names and types of a Dataset (``ds.schema()``): ``types`` are
    ``pyarrow.DataType``s for Arrow blocks (they compare equal to their names, so
    ``types == ("int64",)`` holds), dtype names for pandas blocks, and Python type
    names for rows. ``base_schema`` is the ``pyarrow.Schema`` where there is one."""

    names: tuple[str, ...]
    types: tuple[Any, ...]
    base_schema: Any = None

    def __repr__(self) -> str:
        shown = [_type_label(t) for t in self.types]
        width = max([len("Column"), *(len(str(n)) for n in self.names)])
        lines = [f"{'Column':<{width}}  Type", f"{'------':<{width}}  ----"]
        lines += [f"{str(n):<{width}}  {t}" for n, t in zip(self.names, shown)]
        return "\n".join(lines)

    def as_braces(self) -> str:
        return "{" + ", ".join(f"{n}: {_type_label(t)}" for n, t in zip(self.names, self.types)) + "}"


def _type_label(type_) -> str:
    if is_tensor_type(type_):
        dtype = type_.value_type.to_pandas_dtype()
        return f"numpy.ndarray(shape={tuple(type_.shape)}, dtype={np.dtype(dtype).name})"
    return str(type_)


_PY_TYPE_NAMES = {bool: "bool", int: "int64", float: "double", str: "string", bytes: "binary"}


def _python_type_name(value) -> str:
    if isinstance(value, np.ndarray):
        return f"ndarray(shape={value.shape}, dtype={value.dtype})"
    if isinstance(value, np.generic):
        return str(value.dtype)
    return _PY_TYPE_NAMES.get(type(value), type(value).__name__)


# -- Arrow helpers -------------------------------------------------------------------


def is_tensor_type(type_) -> bool:
    pa = pyarrow_or_none()
    return pa is not None and isinstance(type_, pa.FixedShapeTensorType)


def _tensor_to_numpy(column) -> np.ndarray:
    """A tensor column (Array or ChunkedArray) as one ndarray of shape (rows, *shape)."""
    pa = pyarrow_or_none()
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    if not chunks:
        shape = tuple(column.type.shape)
        return np.empty((0, *shape), dtype=column.type.value_type.to_pandas_dtype())
    arrays = [chunk.to_numpy_ndarray() for chunk in chunks]
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


def arrow_column(values) -> Any:
    """One Arrow array from a numpy array or a list of Python values.

    Raises ``NotArrowable`` for values Arrow cannot hold as one typed column.
    """
    pa = pyarrow_or_none()
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    if isinstance(values, np.ndarray) and values.ndim > 1:
        if values.dtype.kind not in "biuf":
            raise NotArrowable(f"a {values.dtype} tensor column")
        return pa.FixedShapeTensorArray.from_numpy_ndarray(np.ascontiguousarray(values))
    if isinstance(values, np.ndarray) and values.dtype != object:
        try:
            return pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
            raise NotArrowable(str(e)) from None
    values = list(values)
    if values and any(isinstance(v, np.ndarray) for v in values):
        return _tensor_from_values(values)
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError) as e:
        raise NotArrowable(str(e)) from None


def _tensor_from_values(values: list):
    shapes = {v.shape if isinstance(v, np.ndarray) else None for v in values}
    if len(shapes) != 1 or None in shapes:
        raise NotArrowable("a column of ndarrays of different shapes (or mixed with other values)")
    return arrow_column(np.stack(values))


def arrow_table(columns: dict) -> Any:
    """An Arrow table from ``{name: values}`` (raises ``NotArrowable``)."""
    pa = pyarrow_or_none()
    return pa.Table.from_arrays([arrow_column(v) for v in columns.values()], names=[str(n) for n in columns])


def compact_arrow(table):
    """``table``, copied into fresh buffers when it is a small slice of bigger ones."""
    if table.get_total_buffer_size() <= 2 * table.nbytes + _COMPACT_SLACK_BYTES:
        return table
    pa = pyarrow_or_none()
    return pa.Table.from_arrays(
        [pa.concat_arrays(c.chunks) if c.num_chunks else c for c in table.columns], schema=table.schema
    )


def _arrow_from_pandas(frame):
    pa = pyarrow_or_none()
    tensors = {
        name: arrow_column(list(frame[name]))
        for name in frame.columns
        if frame[name].dtype == object and len(frame) and isinstance(frame[name].iloc[0], np.ndarray)
    }
    try:
        plain = frame.drop(columns=list(tensors)) if tensors else frame
        table = pa.Table.from_pandas(plain, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
        raise NotArrowable(str(e)) from None
    for position, name in enumerate(frame.columns):
        if name in tensors:
            table = table.add_column(position, str(name), tensors[name])
    return table.replace_schema_metadata(None)


# -- the interface ------------------------------------------------------------------


class BlockAccessor(ABC):
    """What ``ray.data`` does with a block, whatever its format."""

    format: ClassVar[str]

    def __init__(self, block):
        self.block = block

    @staticmethod
    def for_block(block) -> BlockAccessor:
        pa = pyarrow_or_none()
        if pa is not None and isinstance(block, pa.Table):
            return ArrowBlock(block)
        pd = pandas_or_none()
        if pd is not None and isinstance(block, pd.DataFrame):
            return PandasBlock(block)
        if isinstance(block, list):
            return RowsBlock(block)
        raise TypeError(
            f"a ray.data block must be a pyarrow.Table, a pandas.DataFrame or a list of dict rows, "
            f"got {type(block).__name__}; build datasets with ray.data.from_arrow/from_pandas/from_items"
        )

    @abstractmethod
    def num_rows(self) -> int: ...

    @abstractmethod
    def size_bytes(self) -> int: ...

    @abstractmethod
    def schema(self) -> Schema | None: ...

    @abstractmethod
    def column_names(self) -> list: ...

    @abstractmethod
    def slice(self, start: int, end: int): ...

    @abstractmethod
    def take(self, indices: np.ndarray):
        """The rows at positions ``indices`` (an integer array), in that order."""

    def filter(self, mask: np.ndarray):
        return self.take(np.flatnonzero(mask))

    @abstractmethod
    def select(self, columns: list): ...

    @abstractmethod
    def rename(self, mapping: dict): ...

    @abstractmethod
    def iter_rows(self) -> Iterator[dict]: ...

    @abstractmethod
    def to_arrow(self):
        """The block as a ``pyarrow.Table`` (raises ``NotArrowable``)."""

    @abstractmethod
    def to_pandas(self): ...

    @abstractmethod
    def to_numpy(self, columns: list | None = None) -> dict[str, np.ndarray]: ...

    @abstractmethod
    def column(self, name) -> np.ndarray:
        """Column ``name`` as one numpy array (no check that it exists)."""


class ArrowBlock(BlockAccessor):
    format = ARROW

    def num_rows(self) -> int:
        return self.block.num_rows

    def size_bytes(self) -> int:
        return self.block.nbytes

    def schema(self) -> Schema | None:
        if not self.block.num_columns:
            return None
        schema = self.block.schema
        return Schema(tuple(schema.names), tuple(schema.types), schema)

    def column_names(self) -> list:
        return self.block.column_names

    def slice(self, start: int, end: int):
        return self.block.slice(start, max(end - start, 0))

    def take(self, indices: np.ndarray):
        return self.block.take(np.asarray(indices, dtype=np.int64))

    def filter(self, mask: np.ndarray):
        return self.block.filter(np.asarray(mask, dtype=bool))

    def select(self, columns: list):
        return self.block.select(list(columns))

    def rename(self, mapping: dict):
        return self.block.rename_columns([mapping.get(c, c) for c in self.block.column_names])

    def _tensor_columns(self) -> list[str]:
        return [f.name for f in self.block.schema if is_tensor_type(f.type)]

    def iter_rows(self) -> Iterator[dict]:
        tensors = self._tensor_columns()
        names = self.block.column_names
        for batch in self.block.to_batches(max_chunksize=_ROW_BATCH):
            if not tensors:
                yield from batch.to_pylist()
                continue
            arrays = {name: _tensor_to_numpy(batch.column(name)) for name in tensors}
            plain = batch.drop_columns(tensors).to_pylist()
            for i, row in enumerate(plain):
                yield {n: arrays[n][i] if n in arrays else row[n] for n in names}

    def to_arrow(self):
        return self.block

    def to_pandas(self):
        pd = require_pandas("converting Arrow blocks to pandas")
        tensors = self._tensor_columns()
        if not tensors:
            return self.block.to_pandas()
        frame = self.block.drop_columns(tensors).to_pandas()
        for position, name in enumerate(self.block.column_names):
            if name in tensors:
                values = _tensor_to_numpy(self.block.column(name))
                column = np.empty(len(values), dtype=object)
                column[:] = list(values)
                frame.insert(position, name, column)
        return frame if len(frame.columns) else pd.DataFrame(index=range(self.block.num_rows))

    def to_numpy(self, columns: list | None = None) -> dict[str, np.ndarray]:
        names = self.block.column_names if columns is None else columns
        return {name: self.column(name) for name in names}

    def column(self, name) -> np.ndarray:
        column = self.block.column(name)
        if is_tensor_type(column.type):
            return _tensor_to_numpy(column)
        values = column.to_numpy()
        if values.dtype == object:  # lists come back as arrays: equal shapes make a tensor
            return _stack(values)
        return values


class PandasBlock(BlockAccessor):
    format = PANDAS

    def num_rows(self) -> int:
        return len(self.block)

    def size_bytes(self) -> int:
        return int(self.block.memory_usage(index=True, deep=False).sum())

    def schema(self) -> Schema | None:
        if not len(self.block.columns):
            return None
        return Schema(tuple(self.block.columns), tuple(str(t) for t in self.block.dtypes))

    def column_names(self) -> list:
        return list(self.block.columns)

    def slice(self, start: int, end: int):
        return self.block.iloc[start:end]

    def take(self, indices: np.ndarray):
        return self.block.iloc[indices].reset_index(drop=True)

    def filter(self, mask: np.ndarray):
        # Filtering the frame itself keeps its columns and dtypes, even when empty.
        return self.block[np.asarray(mask, dtype=bool)].reset_index(drop=True)

    def select(self, columns: list):
        return self.block[list(columns)]

    def rename(self, mapping: dict):
        return self.block.rename(columns=mapping)

    def iter_rows(self) -> Iterator[dict]:
        yield from self.block.to_dict("records")

    def to_arrow(self):
        return _arrow_from_pandas(self.block)

    def to_pandas(self):
        return self.block

    def to_numpy(self, columns: list | None = None) -> dict[str, np.ndarray]:
        names = self.block.columns if columns is None else columns
        return {name: _stack(self.block[name].to_numpy()) for name in names}

    def column(self, name) -> np.ndarray:
        return self.block[name].to_numpy()


class RowsBlock(BlockAccessor):
    format = ROWS

    def num_rows(self) -> int:
        return len(self.block)

    def size_bytes(self) -> int:
        # A rough figure (rows of Python objects have no cheap exact size): enough for
        # the executor's memory estimates.
        return 64 * len(self.block) * max(len(self.block[0]), 1) if self.block else 0

    def schema(self) -> Schema | None:
        names: dict[str, str] = {}
        for row in self.block:
            for name, value in row.items():
                if names.get(name) in (None, "null"):
                    names[name] = "null" if value is None else _python_type_name(value)
        if not names:
            return None
        return Schema(tuple(names), tuple(names.values()))

    def column_names(self) -> list:
        return ordered_keys(self.block)

    def slice(self, start: int, end: int):
        return self.block[start:end]

    def take(self, indices: np.ndarray):
        return [self.block[i] for i in indices]

    def select(self, columns: list):
        return [{c: row.get(c) for c in columns} for row in self.block]

    def rename(self, mapping: dict):
        return [{mapping.get(k, k): v for k, v in row.items()} for row in self.block]

    def iter_rows(self) -> Iterator[dict]:
        yield from (dict(row) for row in self.block)

    def to_arrow(self):
        require_pyarrow("converting rows to an Arrow table")
        names = ordered_keys(self.block)
        return arrow_table({n: [row.get(n) for row in self.block] for n in names})

    def to_pandas(self):
        pd = require_pandas("converting a dataset to pandas")
        if not self.block:
            return pd.DataFrame()
        names = ordered_keys(self.block)
        return pd.DataFrame({n: column_for_pandas([row.get(n) for row in self.block]) for n in names})

    def to_numpy(self, columns: list | None = None) -> dict[str, np.ndarray]:
        names = ordered_keys(self.block) if columns is None else columns
        return {name: _stack([row.get(name) for row in self.block]) for name in names}

    def column(self, name) -> np.ndarray:
        values = np.empty(len(self.block), dtype=object)
        values[:] = [row.get(name) for row in self.block]
        if len(values) and not any(isinstance(v, (np.ndarray, list, dict)) for v in values):
            values = _tighten(values)
        return values


# -- shared helpers ------------------------------------------------------------------


def ordered_keys(rows: list[dict]) -> list:
    keys: dict = {}
    for row in rows:
        if not isinstance(row, dict):
            raise TypeError(f"rows must be dicts (column name -> value), got {type(row).__name__}: {row!r:.80}")
        keys.update(dict.fromkeys(row))
    return list(keys)


def column_for_pandas(values: list):
    # A column of arrays (tensors) stays one ndarray per row: pandas would try to
    # broadcast them otherwise.
    if values and all(isinstance(v, np.ndarray) for v in values):
        column = np.empty(len(values), dtype=object)
        column[:] = values
        return column
    return values


def _stack(values) -> np.ndarray:
    """A column as one ndarray; a column of equal-shaped arrays becomes one tensor."""
    if isinstance(values, np.ndarray) and values.dtype != object:
        return values
    values = list(values)
    if values and all(isinstance(v, np.ndarray) for v in values):
        if len({v.shape for v in values}) == 1 and values[0].dtype != object:
            return np.stack(values)
    if any(isinstance(v, (list, tuple, dict, np.ndarray)) for v in values):
        column = np.empty(len(values), dtype=object)  # ragged or nested: one object per row
        column[:] = values
        return column
    return np.array(values)


def _tighten(values: np.ndarray) -> np.ndarray:
    # A column of plain numbers (no None) gets a numeric dtype, as pandas would give it.
    try:
        tight = np.array(values.tolist())
    except (TypeError, ValueError):
        return values
    return tight if tight.dtype.kind in "biuf" and tight.shape == values.shape else values
