"""The ray tasks (and the one actor class) behind ``ray.data``: each reads or makes
one block on a worker and returns it with its metadata, so the driver learns row
counts and schemas without fetching blocks."""

from __future__ import annotations

import numpy as np

import ray
from ray.data import _blocks, _sort


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
def accumulate_block(block, aggs: tuple) -> list:
    """Each aggregation's accumulator over the whole block."""
    group = _blocks.Group(block, 0, _blocks.num_rows(block))
    return [agg.accumulate_group(agg.init(None), group) for agg in aggs]


@ray.remote
def sample_sort_keys(block, key: _sort.SortKey, count: int, seed: list[int]) -> list[tuple]:
    return _sort.sample_keys(block, key, count, seed)


@ray.remote
def split_by_boundaries(block, key: _sort.SortKey, boundaries: list[tuple]):
    """The map side of a sort: this block sorted and cut at the boundaries."""
    parts = _sort.split_sorted(block, key, boundaries)
    return parts[0] if len(parts) == 1 else tuple(parts)


@ray.remote(num_returns=2)
def merge_sorted(key: _sort.SortKey, *parts):
    """The reduce side of a sort: the k-th pieces of every block, joined and sorted."""
    out = _sort.sort_block(_blocks.concat_blocks(list(parts)), key)
    return out, _blocks.metadata_of(out)


@ray.remote(num_returns=2)
def zip_blocks(*blocks):
    """The columns of ``blocks`` (equal row counts) side by side; a repeated column
    name gets the suffix ``_1``, ``_2``, ... (the index of the dataset it came from)."""
    columns: dict = {}
    for index, block in enumerate(blocks):
        for name, values in _blocks.to_numpy_dict(block).items():
            columns[name if name not in columns else f"{name}_{index}"] = values
    out = _blocks.block_from_batch(columns) if any(_blocks.num_rows(b) for b in blocks) else blocks[0]
    return out, _blocks.metadata_of(out)


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
