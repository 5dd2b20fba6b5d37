"""All-to-all operators: what runs at a barrier of the plan (``_plan.AllToAll``).

Each is a small frozen dataclass called as ``op(inputs, context)`` on the driver
(``inputs``: one list of ``RefBundle``s per input operator); it submits rounds of
tasks, records each round in ``context`` for ``Dataset.stats()``, and returns the
output bundles. The driver sees only metadata, sort samples and small per-task
results, never the blocks.

* ``Sort``: every block offers key samples, every block picks the boundaries from
  all samples and groups its rows by key range, and output block k joins its range
  of every block and sorts it (``_sort``); submitted as one graph of tasks, so the
  driver waits only for the outputs.
* ``GroupbyAggregate``: built-in aggregations over Arrow-able columns reduce each
  block to one row per key with Arrow's hash aggregation, then merge the partials
  per key range (``_arrow_groupby``); anything else is a ``Sort`` whose output
  partitions aggregate run by run (``AggregateGroups``).
* ``Repartition`` (ranges of rows, or dealt round-robin), ``RandomShuffle``,
  ``RandomizeBlocks`` and ``Zip``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import ray
from ray.data import _arrow_groupby, _blocks, _sort, _tasks
from ray.data._plan import RefBundle
from ray.data._tasks import _TaskClock, finish
from ray.data._transforms import AggregateGroups

# Keys each block offers for the boundaries (random rows; a partial aggregate, being
# sorted, offers its quantiles).
SORT_SAMPLES_PER_BLOCK = 64


@ray.remote
def sample_task(block, key: _sort.SortKey, count: int, seed: list[int]) -> list[tuple]:
    return _sort.sample_keys(block, key, count, seed)


def _boundaries(key: _sort.SortKey, num_parts: int, samples) -> list[tuple]:
    """``num_parts - 1`` boundaries from every block's samples (duplicates leave
    partitions empty, so there are always ``num_parts``). Every task that needs them
    computes them from the same samples (a few hundred keys: cheaper than one more
    round of tasks)."""
    return _sort.choose_boundaries([s for part in samples for s in part], key, num_parts)


@ray.remote(num_returns=2)
def partition_task(block, key: _sort.SortKey, given: list | None, num_parts: int, *samples):
    boundaries = given if given is not None else _boundaries(key, num_parts, samples)
    grouped, offsets = _sort.group_by_partition(block, key, boundaries)
    return _blocks.for_storage(grouped), offsets


@ray.remote(num_returns=2)
def merge_task(key: _sort.SortKey, part: int, num_maps: int, then, *grouped_then_offsets):
    clock = _TaskClock()
    grouped, offsets = grouped_then_offsets[:num_maps], grouped_then_offsets[num_maps:]
    out = _sort.merge_partition(list(grouped), list(offsets), key, part)
    return finish(then(out) if then is not None else out, clock)


@ray.remote(num_returns=3)
def partial_aggregate(block, key_columns: tuple, aggs: tuple, count: int):
    """A block's partial aggregation (sorted by key), the keys of a few of its rows, and
    its number of rows (one per group in the block)."""
    partial = _blocks.for_storage(_arrow_groupby.partial(block, key_columns, aggs))
    samples = _sort.sample_sorted(partial, _sort.SortKey.of(list(key_columns)), count)
    return partial, samples, _blocks.num_rows(partial)


@ray.remote(num_returns=2)
def combine_partition(key_columns: tuple, aggs: tuple, num_parts: int, part: int, *partials_then_samples):
    clock = _TaskClock()
    key = _sort.SortKey.of(list(key_columns))
    count = len(partials_then_samples) // 2
    partials, samples = partials_then_samples[:count], partials_then_samples[count:]
    boundaries = _boundaries(key, num_parts, samples)
    joined = _sort.partition_of(list(partials), key, boundaries, part)
    return finish(_arrow_groupby.combine(joined, key_columns, aggs), clock)


COMBINE_ROWS_PER_PART = 250_000


def combine_parts(partial_rows: list[int], num_blocks: int) -> int:
    """How many output blocks a groupby without ``num_partitions`` combines into: one
    per ``COMBINE_ROWS_PER_PART`` partial rows (the groups found per block, summed), at
    most one per input block. Each combine task reads every partial, so few groups
    (the usual aggregation) take one task instead of one per input block."""
    return max(1, min(num_blocks, -(-sum(partial_rows) // COMBINE_ROWS_PER_PART)))


def _bundles(pairs: list, metadata: list) -> list[RefBundle]:
    return [RefBundle(pair[0], meta) for pair, meta in zip(pairs, metadata)]


def _timed_round(context, name: str, pairs: list) -> list:
    """Wait for a round of (block, metadata) tasks; record it; return the metadata."""
    start = time.perf_counter()
    metadata = ray.get([p[1] for p in pairs])
    context.record_round(name, metadata, len(pairs), time.perf_counter() - start)
    return metadata


def _live(bundles: list[RefBundle]) -> list[RefBundle]:
    return [b for b in bundles if b.metadata.num_rows]


@dataclass(frozen=True)
class Sort:
    """A range partition by key, submitted as one graph of tasks (the driver waits
    only for the output): sample -> boundaries -> group by partition -> merge."""

    key: _sort.SortKey
    boundaries: tuple | None = None  # the user's, already ordered
    num_parts: int | None = None
    then: Callable | None = None  # applied to each output partition in its task

    def __call__(self, inputs: list, context) -> list[RefBundle]:
        live = _live(inputs[0])
        if not live:
            return self._empty(inputs[0], context)
        names = next((b.metadata.schema.names for b in live if b.metadata.schema is not None), None)
        self.key.check_columns(list(names) if names else None, "sort")
        start = time.perf_counter()
        if self.boundaries is not None:
            given, samples = list(self.boundaries), []
            num_parts = len(given) + 1
        else:
            given, num_parts = None, self.num_parts or len(live)
            samples = [sample_task.remote(b.block_ref, self.key, SORT_SAMPLES_PER_BLOCK, [i])
                       for i, b in enumerate(live)]
        maps = [partition_task.remote(b.block_ref, self.key, given, num_parts, *samples) for b in live]
        grouped, offsets = [m[0] for m in maps], [m[1] for m in maps]
        outputs = [
            merge_task.remote(self.key, k, len(maps), self.then, *grouped, *offsets) for k in range(num_parts)
        ]
        metadata = ray.get([o[1] for o in outputs])
        wall = time.perf_counter() - start
        if self.boundaries is None:
            context.record_round("SortSample", [], len(live), 0.0)
        context.record_round("ShuffleMap", [], len(maps), 0.0)
        context.record_round("ShuffleReduce", metadata, len(outputs), wall)
        return _bundles(outputs, metadata)

    def _empty(self, bundles: list[RefBundle], context) -> list[RefBundle]:
        if self.then is None or not bundles:
            return bundles[:1]
        pair = merge_task.remote(self.key, 0, 1, self.then, bundles[0].block_ref, [0, 0])
        return _bundles([pair], _timed_round(context, "ShuffleReduce", [pair]))


@dataclass(frozen=True)
class GroupbyAggregate:
    key_columns: tuple
    aggs: tuple
    num_partitions: int | None = None

    def __call__(self, inputs: list, context) -> list[RefBundle]:
        live = _live(inputs[0])
        schema = next((b.metadata.schema for b in live if b.metadata.schema is not None), None)
        if schema is not None:
            _blocks.check_columns([*self.key_columns, *(c for a in self.aggs for c in a.columns())],
                                  list(schema.names), "groupby")
        if not live or not _arrow_groupby.supports(self.aggs, schema):
            key = _sort.SortKey.of(list(self.key_columns))
            run = Sort(key, None, self.num_partitions, AggregateGroups(self.key_columns, self.aggs))
            return run(inputs, context)
        start = time.perf_counter()
        pairs = [
            partial_aggregate.remote(b.block_ref, self.key_columns, self.aggs, SORT_SAMPLES_PER_BLOCK)
            for b in live
        ]
        partials, samples = [p[0] for p in pairs], [p[1] for p in pairs]
        num_parts = self.num_partitions or combine_parts(ray.get([p[2] for p in pairs]), len(live))
        outputs = [
            combine_partition.remote(self.key_columns, self.aggs, num_parts, k, *partials, *samples)
            for k in range(num_parts)
        ]
        metadata = ray.get([o[1] for o in outputs])
        context.record_round("PartialAggregate", [], len(pairs), 0.0)
        context.record_round("CombineAggregate", metadata, len(outputs), time.perf_counter() - start)
        return _bundles(outputs, metadata)


# -- moving rows by position ---------------------------------------------------------------


def row_ranges(bundles: list[RefBundle], ranges: list[tuple[int, int]]) -> list[tuple]:
    """(block ref, metadata ref) holding global rows [lo, hi), per range, made by tasks."""
    counts = [b.metadata.num_rows for b in bundles]
    starts = np.concatenate(([0], np.cumsum(counts))).tolist()
    outputs = []
    for lo, hi in ranges:
        pieces = [
            (b.block_ref, (max(lo - s, 0), min(hi - s, c)))
            for b, s, c in zip(bundles, starts, counts)
            if s < hi and s + c > lo
        ]
        if not pieces and bundles:  # an empty range: an empty slice keeps the columns
            pieces = [(bundles[0].block_ref, (0, 0))]
        if not pieces:
            block = _blocks.empty_block()
            outputs.append((ray.put(block), _blocks.metadata_of(block)))
        else:
            bounds, refs = [b for _, b in pieces], [ref for ref, _ in pieces]
            outputs.append(_tasks.assemble_slices.remote(bounds, *refs))
    return outputs


def resolve(pairs: list[tuple]) -> list[RefBundle]:
    """Bundles from (block ref, metadata or metadata ref) pairs."""
    pending = [p[1] for p in pairs if not isinstance(p[1], _blocks.BlockMetadata)]
    resolved = iter(ray.get(pending)) if pending else iter(())
    return [RefBundle(p[0], p[1] if isinstance(p[1], _blocks.BlockMetadata) else next(resolved)) for p in pairs]


def even_ranges(total: int, parts: int) -> list[tuple[int, int]]:
    return [(total * j // parts, total * (j + 1) // parts) for j in range(parts)]


@dataclass(frozen=True)
class Repartition:
    num_blocks: int

    def __call__(self, inputs: list, context) -> list[RefBundle]:
        bundles = inputs[0]
        total = sum(b.metadata.num_rows for b in bundles)
        pairs = row_ranges(bundles, even_ranges(total, self.num_blocks))
        start = time.perf_counter()
        out = resolve(pairs)
        context.record_round("Repartition", [b.metadata for b in out], len(pairs), time.perf_counter() - start)
        return out


@dataclass(frozen=True)
class Deal:
    """Every block deals its rows into ``num_blocks`` parts (round-robin, or at random
    when ``seed`` is set) and output block k joins the k-th parts (shuffled by seed)."""

    num_blocks: int | None
    seed: int | None

    def __call__(self, inputs: list, context) -> list[RefBundle]:
        bundles = inputs[0]
        parts = self.num_blocks or max(len(bundles), 1)
        counts = [b.metadata.num_rows for b in bundles]
        firsts = np.concatenate(([0], np.cumsum(counts))).tolist()
        start = time.perf_counter()
        dealt = [
            _tasks.deal_rows.options(num_returns=parts).remote(
                b.block_ref, parts, firsts[i], None if self.seed is None else [self.seed, 0, i]
            )
            for i, b in enumerate(bundles)
        ]
        if parts == 1:
            dealt = [[ref] for ref in dealt]
        outputs = [
            _tasks.concat_parts.remote(None if self.seed is None else [self.seed, 1, k], *[d[k] for d in dealt])
            for k in range(parts)
        ]
        metadata = ray.get([o[1] for o in outputs])
        context.record_round("ShuffleMap", [], len(dealt), 0.0)
        context.record_round("ShuffleReduce", metadata, len(outputs), time.perf_counter() - start)
        return _bundles(outputs, metadata)


@dataclass(frozen=True)
class RandomizeBlocks:
    seed: int | None

    def __call__(self, inputs: list, context) -> list[RefBundle]:
        bundles = list(inputs[0])
        random.Random(self.seed).shuffle(bundles)
        return bundles


@dataclass(frozen=True)
class Zip:
    """The columns of several datasets side by side; the others' rows are re-cut by
    tasks to line up with the first one's blocks."""

    def __call__(self, inputs: list, context) -> list[RefBundle]:
        first, others = inputs[0], inputs[1:]
        counts = [b.metadata.num_rows for b in first]
        total = sum(counts)
        for other in others:
            rows = sum(b.metadata.num_rows for b in other)
            if rows != total:
                raise ValueError(
                    f"zip needs datasets with the same number of rows: this one has {total}, "
                    f"the other {rows}; use limit() or split_at_indices() to match them"
                )
        edges = np.concatenate(([0], np.cumsum(counts))).tolist()
        ranges = list(zip(edges, edges[1:]))
        aligned = [[ref for ref, _ in row_ranges(other, ranges)] for other in others]
        outputs = [
            _tasks.zip_blocks.remote(b.block_ref, *[parts[i] for parts in aligned])
            for i, b in enumerate(first)
        ]
        return _bundles(outputs, _timed_round(context, "Zip", outputs))
