"""The ray tasks (and the one actor class) behind ``ray.data``: each reads or makes
one block on a worker and returns it with its metadata, so the driver learns row
counts and schemas without fetching blocks."""

from __future__ import annotations

import csv
import os

import numpy as np

import ray
from ray.data import _blocks


@ray.remote
def block_metadata(block) -> _blocks.BlockMetadata:
    return _blocks.metadata_of(block)


@ray.remote(num_returns=2)
def transform_block(block, transform):
    out = transform(block)
    return out, _blocks.metadata_of(out)


@ray.remote(num_returns=2)
def range_block(start: int, end: int):
    out = _blocks.block_from_batch({"id": list(range(start, end))})
    if not isinstance(out, list):
        out["id"] = out["id"].astype("int64")
    return out, _blocks.metadata_of(out)


@ray.remote(num_returns=2)
def numpy_block(array):
    out = _blocks.block_from_batch({"data": array})
    return out, _blocks.metadata_of(out)


@ray.remote(num_returns=2)
def assemble_slices(bounds: list[tuple[int, int]], *blocks):
    """One output block of ``repartition``: ``blocks[i][bounds[i][0]:bounds[i][1]]``, joined."""
    out = _blocks.concat_blocks(
        [_blocks.slice_block(b, start, end) for b, (start, end) in zip(blocks, bounds)]
    )
    return out, _blocks.metadata_of(out)


@ray.remote
def deal_rows(block, num_parts: int, first_row: int, seed: list[int] | None):
    """The map side of an all-to-all exchange: the dataset's row r goes to part
    r % num_parts (this block starts at row ``first_row``), or to a random part when
    ``seed`` is given (``random_shuffle``)."""
    if seed is None:
        targets = (first_row + np.arange(_blocks.num_rows(block))) % num_parts
    else:
        targets = np.random.default_rng(seed).integers(num_parts, size=_blocks.num_rows(block))
    parts = [_blocks.take_rows(block, np.flatnonzero(targets == k)) for k in range(num_parts)]
    return parts[0] if num_parts == 1 else tuple(parts)


@ray.remote(num_returns=2)
def concat_parts(seed: list[int] | None, *parts):
    """The reduce side: join the parts; shuffle them when ``seed`` is given."""
    out = _blocks.concat_blocks(list(parts))
    if seed is not None:
        out = _blocks.take_rows(out, np.random.default_rng(seed).permutation(_blocks.num_rows(out)))
    return out, _blocks.metadata_of(out)


@ray.remote
def aggregate_block(block, columns: list) -> dict:
    return _blocks.partial_aggregate(block, columns)


@ray.remote(num_returns=2)
def read_csv_file(path: str, include_paths: bool, pandas_kwargs: dict):
    pd = _blocks.require_pandas("ray.data.read_csv")
    out = pd.read_csv(path, **pandas_kwargs)
    if include_paths:
        out["path"] = path
    return out, _blocks.metadata_of(out)


@ray.remote
def write_csv_block(block, path: str, pandas_kwargs: dict) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if _blocks.is_pandas(block):
        block.to_csv(path, index=False, **pandas_kwargs)
        return path
    if pandas_kwargs:
        _blocks.require_pandas(f"write_csv options {sorted(pandas_kwargs)}")
    names = _blocks.schema_of(block).names if block else ()
    with open(path, "w", newline="") as f:  # no pandas here: the csv module writes the rows
        writer = csv.DictWriter(f, fieldnames=names)
        writer.writeheader()
        writer.writerows(block)
    return path


@ray.remote
def to_pandas_task(block):
    return _blocks.to_pandas_block(block)


@ray.remote
def to_numpy_task(block, column):
    arrays = _blocks.to_numpy_dict(block)
    if column is None:
        return arrays
    if column not in arrays:
        raise KeyError(f"no column {column!r}; the columns are {list(arrays)}")
    return arrays[column]


@ray.remote
class TransformActor:
    """Holds one instance of a callable class given to ``map``/``map_batches``/..."""

    def __init__(self, cls, args, kwargs):
        self._instance = cls(*args, **kwargs)

    @ray.method(num_returns=2)
    def apply(self, block, transform):
        out = transform.with_instance(self._instance)(block)
        return out, _blocks.metadata_of(out)
