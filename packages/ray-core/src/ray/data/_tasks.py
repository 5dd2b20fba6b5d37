"""The ray tasks (and the one actor class) behind ``ray.data``: each makes one block on
a worker and returns it with its metadata (row count, size, schema, how the task
ran), so the driver learns about blocks without fetching them."""

from __future__ import annotations

import time

import cloudpickle
import numpy as np

import ray
from ray.data import _blocks
from ray.data._plan import ReadTask
from ray.data._transforms import TASK_INDEX


class _TaskClock:
    """Wall and CPU time of the running task, for ``Dataset.stats()``."""

    def __init__(self):
        self.start_time_s = time.time()
        self._wall = time.perf_counter()
        self._cpu = time.process_time()

    def stats(self) -> _blocks.BlockExecStats:
        context = ray.get_runtime_context()
        return _blocks.BlockExecStats(
            wall_time_s=time.perf_counter() - self._wall,
            cpu_time_s=time.process_time() - self._cpu,
            node_id=context.get_node_id(),
            task_id=context.get_task_id(),
            start_time_s=self.start_time_s,
        )


def finish(block, clock: _TaskClock, input_files: tuple = ()) -> tuple:
    """``(block, metadata)`` as a task returns them; Arrow slices are compacted."""
    block = _blocks.for_storage(block)
    return block, _blocks.metadata_of(block, input_files=input_files, exec_stats=clock.stats())


class PrePickled:
    """A transform pickled once by the driver: each task's arguments then carry its bytes
    (cheap to serialize) instead of pickling the function again for every block; a
    worker's unpickling of the arguments rebuilds the transform itself. Local mode does
    not serialize arguments, so the tasks also accept the carrier (``loaded``)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes):
        self.data = data

    def __reduce__(self):
        return cloudpickle.loads, (self.data,)

    @staticmethod
    def loaded(transform):
        return cloudpickle.loads(transform.data) if type(transform) is PrePickled else transform


def _apply(transform, source, index: int):
    transform = PrePickled.loaded(transform)
    clock = _TaskClock()
    token = TASK_INDEX.set(index)
    try:
        files: tuple = ()
        if isinstance(source, ReadTask):
            files = source.input_files
            block = source()
        else:
            block = source
        if transform is not None:
            block = transform(block)
    finally:
        TASK_INDEX.reset(token)
    return finish(block, clock, files)


@ray.remote(num_returns=2)
def run_map(transform, source, index: int):
    """Block ``index`` of a (fused) one-to-one operator: ``source`` is the input block
    or a ``ReadTask``; ``transform`` is applied to it (None: none)."""
    return _apply(transform, source, index)


@ray.remote
class TransformActor:
    """Holds one instance of a callable class given to ``map``/``map_batches``/..."""

    def __init__(self, cls, args, kwargs):
        self._instance = cls(*args, **kwargs)

    @ray.method(num_returns=2)
    def apply(self, block, transform, index: int):
        return _apply(PrePickled.loaded(transform).with_instance(self._instance), block, index)


@ray.remote
def block_metadata(block) -> _blocks.BlockMetadata:
    return _blocks.metadata_of(block)


@ray.remote(num_returns=2)
def numpy_block(array):
    return finish(_blocks.block_from_batch({"data": array}), _TaskClock())


@ray.remote(num_returns=2)
def slice_block_task(block, start: int, end: int):
    return finish(_blocks.slice_block(block, start, end), _TaskClock())


@ray.remote(num_returns=2)
def assemble_slices(bounds: list[tuple[int, int]], *blocks):
    """One output block of ``repartition``: ``blocks[i][bounds[i][0]:bounds[i][1]]``, joined."""
    clock = _TaskClock()
    out = _blocks.concat_blocks(
        [_blocks.slice_block(b, start, end) for b, (start, end) in zip(blocks, bounds)]
    )
    return finish(out, clock)


@ray.remote
def deal_rows(block, num_parts: int, first_row: int, seed: list[int] | None):
    """The map side of an all-to-all exchange: the dataset's row r goes to part
    r % num_parts (this block starts at row ``first_row``), or to a random part when
    ``seed`` is given (``random_shuffle``)."""
    if seed is None:
        targets = (first_row + np.arange(_blocks.num_rows(block))) % num_parts
    else:
        targets = np.random.default_rng(seed).integers(num_parts, size=_blocks.num_rows(block))
    order = np.argsort(targets, kind="stable")
    cuts = np.searchsorted(targets[order], np.arange(num_parts + 1))
    parts = [_blocks.for_storage(_blocks.take_rows(block, order[cuts[k]:cuts[k + 1]])) for k in range(num_parts)]
    return parts[0] if num_parts == 1 else tuple(parts)


@ray.remote(num_returns=2)
def concat_parts(seed: list[int] | None, *parts):
    """The reduce side: join the parts; shuffle them when ``seed`` is given."""
    clock = _TaskClock()
    out = _blocks.concat_blocks(list(parts))
    if seed is not None:
        out = _blocks.take_rows(out, np.random.default_rng(seed).permutation(_blocks.num_rows(out)))
    return finish(out, clock)


@ray.remote
def accumulate_block(block, aggs: tuple) -> list:
    """Each aggregation's accumulator over the whole block."""
    group = _blocks.Group(block, 0, _blocks.num_rows(block))
    return [agg.accumulate_group(agg.init(None), group) for agg in aggs]


@ray.remote(num_returns=2)
def zip_blocks(*blocks):
    """The columns of ``blocks`` (equal row counts) side by side; a repeated column
    name gets the suffix ``_1``, ``_2``, ... (the index of the dataset it came from)."""
    clock = _TaskClock()
    columns: dict = {}
    for index, block in enumerate(blocks):
        for name, values in _blocks.to_numpy_dict(block).items():
            columns[name if name not in columns else f"{name}_{index}"] = values
    out = _blocks.block_from_batch(columns) if any(_blocks.num_rows(b) for b in blocks) else blocks[0]
    return finish(out, clock)


@ray.remote
def to_pandas_task(block):
    return _blocks.to_pandas_block(block)


@ray.remote
def to_arrow_task(block):
    return _blocks.for_storage(_blocks.to_arrow_block(block))


@ray.remote
def to_numpy_task(block, column):
    arrays = _blocks.to_numpy_dict(block)
    if column is None:
        return arrays
    if column not in arrays:
        raise KeyError(f"no column {column!r}; the columns are {list(arrays)}")
    return arrays[column]
