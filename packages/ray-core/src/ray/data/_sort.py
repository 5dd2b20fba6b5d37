"""The decisions behind ``Dataset.sort`` and ``Dataset.groupby``: pure, no ray.

A distributed sort (``_shuffle.Sort`` submits the tasks as one graph):

1. every block returns the keys of a few random rows (``sample_keys``), and one
   task sorts the samples and picks ``num_parts - 1`` boundaries at even quantiles
   (``choose_boundaries``);
2. every block groups its rows by partition (``group_by_partition``: a counting
   sort of partition numbers for one numeric key, else a sort and binary search);
3. output block k takes its range out of every grouped block (slices, no copy) and
   sorts what it joined (``merge_partition``).

Piece k holds the rows whose key is >= boundary k-1 and < boundary k, so equal keys
always land in the same output block.

Order: ascending or descending per column; nulls (None, NaN, NaT) go last either
way, as with pandas' ``na_position="last"``.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ray.data import _blocks


@dataclass(frozen=True)
class SortKey:
    """The columns to order by, each ascending or descending."""

    columns: tuple
    descending: tuple[bool, ...]

    @classmethod
    def of(cls, key, descending=False) -> SortKey:
        """Validate Ray's ``sort(key, descending)`` arguments."""
        if isinstance(key, str):
            columns = (key,)
        elif isinstance(key, (list, tuple)) and key and all(isinstance(k, str) for k in key):
            columns = tuple(key)
        else:
            raise ValueError(f"the sort key must be a column name or a non-empty list of them, got {key!r}")
        if isinstance(descending, (bool, np.bool_)):
            flags = (bool(descending),) * len(columns)
        elif isinstance(descending, (list, tuple)) and all(isinstance(d, (bool, np.bool_)) for d in descending):
            flags = tuple(bool(d) for d in descending)
        else:
            raise ValueError(f"descending must be a bool or a list of bools, got {descending!r}")
        if len(flags) != len(columns):
            raise ValueError(
                f"descending has {len(flags)} entries for {len(columns)} sort columns {list(columns)}: "
                "give one bool, or one per column"
            )
        return cls(columns, flags)

    def check_columns(self, names: list | None, what: str) -> None:
        _blocks.check_columns(self.columns, names, what)

    def row_key(self, values: tuple) -> tuple:
        """A tuple that orders rows as this key does (nulls last in every direction)."""
        return tuple(
            (1, 0) if _blocks.is_null(v) else (0, _Reversed(v) if desc else v)
            for v, desc in zip(values, self.descending)
        )


@functools.total_ordering
class _Reversed:
    """Orders the other way round (descending, for values that cannot be negated)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return self.value == other.value

    def __lt__(self, other):
        return other.value < self.value


def _key_arrays(block, key: SortKey) -> list[np.ndarray]:
    return [_blocks.column_array(block, c) for c in key.columns]


def key_values_at(block, key: SortKey, positions) -> list[tuple]:
    """The keys of the rows at ``positions``, as tuples of Python values (what
    samples, boundaries and ``row_key`` compare)."""
    positions = np.asarray(positions, dtype=np.int64)
    if not len(positions):
        return []
    picked = _blocks.take_rows(block, positions)
    arrays = [_blocks.column_array(picked, c) for c in key.columns]
    if len(arrays) == 1 and arrays[0].dtype.kind in "biuf":  # numbers: tolist() is item()
        return [(v,) for v in arrays[0].tolist()]
    return [tuple(_blocks.python_scalar(a[i]) for a in arrays) for i in range(len(positions))]


class _RowKeys(Sequence):
    """The row keys of a sorted block, built only for the rows bisect looks at."""

    def __init__(self, block, key: SortKey):
        self._block, self._key = block, key
        self._len = _blocks.num_rows(block)

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, i):
        return self._key.row_key(key_values_at(self._block, self._key, [i])[0])


def sample_keys(block, key: SortKey, count: int, seed) -> list[tuple]:
    """The keys of up to ``count`` random rows of ``block``."""
    size = _blocks.num_rows(block)
    if not size:
        return []
    rows = np.random.default_rng(seed).choice(size, size=min(count, size), replace=False)
    return key_values_at(block, key, np.sort(rows))


def sample_sorted(block, key: SortKey, count: int) -> list[tuple]:
    """The keys of up to ``count`` rows spread evenly over a sorted block (its
    quantiles: better boundaries than random rows, at no cost)."""
    size = _blocks.num_rows(block)
    if not size:
        return []
    positions = np.unique(np.linspace(0, size - 1, num=min(count, size)).astype(np.int64))
    return key_values_at(block, key, positions)


def choose_boundaries(samples: list[tuple], key: SortKey, num_parts: int) -> list[tuple]:
    """``num_parts - 1`` sample keys at even quantiles, in key order (fewer when there
    are fewer samples; then some output blocks stay empty)."""
    if num_parts < 1:
        raise ValueError(f"num_parts must be positive, got {num_parts}")
    if len(key.columns) == 1 and all(type(s[0]) in (int, float) and s[0] == s[0] for s in samples):
        # One plain numeric column without NaN: ordered by value (row_key's tuples
        # order them the same way, nulls aside, at several times the cost).
        ordered = sorted(samples, key=_first, reverse=key.descending[0])
    else:
        ordered = _sorted_checked(samples, key)
    if not ordered:
        return []
    return [ordered[len(ordered) * k // num_parts] for k in range(1, num_parts)]


def _first(sample: tuple):
    return sample[0]


def given_boundaries(boundaries, key: SortKey) -> list[tuple]:
    """The user's ``sort(boundaries=...)``: values (tuples for several columns), sorted."""
    if not isinstance(boundaries, (list, tuple)):
        raise ValueError(f"boundaries must be a list of key values, got {type(boundaries).__name__}")
    width = len(key.columns)
    keys = [tuple(b) if isinstance(b, (list, tuple)) else (b,) for b in boundaries]
    for b in keys:
        if len(b) != width:
            raise ValueError(f"boundary {b!r} has {len(b)} values for sort columns {list(key.columns)}")
    return _sorted_checked(keys, key)


def _sorted_checked(samples: list[tuple], key: SortKey) -> list[tuple]:
    try:
        return sorted(samples, key=key.row_key)
    except TypeError as e:
        raise TypeError(_mixed_types_message(key, str(e))) from None


def _mixed_types_message(key: SortKey, detail: str) -> str:
    return (
        f"cannot order the values of sort column(s) {list(key.columns)}: {detail}. "
        "A column must hold one comparable type: cast it first (map_batches)"
    )


# -- sorting one block ------------------------------------------------------------------
#
# The fast path: one numeric (or date) key column without nulls is ordered by numpy,
# whose sort is vectorized (AVX-512 / AVX2 where the CPU has them) and several times
# faster than Arrow's ``sort_indices`` on this machine. numpy's fast sort is not
# stable, so the order is made stable after: an integer key is sorted as the unique
# composite ``rank * n + row``; a float key as its order-preserving bits with the row
# in the low bits (``_float_order``), runs alike in the high bits re-sorted by row.


def _fast_key(block, key: SortKey) -> np.ndarray | None:
    """The key column as numpy when the fast path applies, else None."""
    if len(key.columns) != 1 or key.columns[0] not in _blocks.column_names(block):
        return None
    values = _blocks.accessor(block).column(key.columns[0])
    kind = values.dtype.kind
    if values.ndim != 1 or kind not in "biufmM":
        return None
    if kind in "mM":
        if np.isnat(values).any():
            return None
        return values.view(np.int64)
    if kind == "f" and np.isnan(values).any():
        return None
    return values.astype(np.int8) if kind == "b" else values


def _fast_order(values: np.ndarray, descending: bool) -> np.ndarray:
    n = len(values)
    if values.dtype.kind in "iu" and n:
        low, high = int(values.min()), int(values.max())
        if (high - low + 1) * n < 2**62 and high < 2**62:
            ranks = (high - values.astype(np.int64)) if descending else (values.astype(np.int64) - low)
            return np.sort(ranks * n + np.arange(n, dtype=np.int64)) % n
        keys = ~values if descending else values
    else:
        keys = -values if descending else values
        if keys.dtype.kind == "f" and 1 < n < 2**24:
            return _float_order(keys.astype(np.float64, copy=False))
    order = np.argsort(keys)
    ordered = keys[order]
    ties = ordered[1:] == ordered[:-1]
    if not ties.any():
        return order
    runs = np.concatenate(([0], np.cumsum(~ties))).astype(np.int64)
    return np.sort(runs * n + order) % n


def _float_order(keys: np.ndarray) -> np.ndarray:
    """The stable ascending order of float64 ``keys`` (no NaN), by one value sort instead
    of an argsort (numpy's vectorized ``sort`` of integers is ~4x its ``argsort`` here):
    each key becomes an order-preserving uint64, its low bits are replaced by the row
    number, and the packed values are sorted. Keys alike in all but those low bits come
    out in row order; those few runs are re-sorted by (key, row) afterwards."""
    n = len(keys)
    bits = (n - 1).bit_length()
    raw = (keys + 0.0).view(np.uint64)  # (+ 0.0: -0.0 and 0.0 are one key)
    negative = raw >> np.uint64(63) == 1
    ordered = np.where(negative, ~raw, raw | np.uint64(1 << 63))
    low = np.uint64((1 << bits) - 1)
    packed = np.sort((ordered & ~low) | np.arange(n, dtype=np.uint64))
    order = (packed & low).astype(np.int64)
    high = packed >> np.uint64(bits)
    alike = high[1:] == high[:-1]
    if alike.any():
        at = np.flatnonzero(np.concatenate(([False], alike)) | np.concatenate((alike, [False])))
        rows = order[at]
        order[at] = rows[np.lexsort((rows, keys[rows], high[at]))]  # (primary key last)
    return order


def sort_indices(block, key: SortKey) -> np.ndarray:
    """The row order that sorts ``block`` by ``key`` (stable, nulls last)."""
    fast = _fast_key(block, key)
    if fast is not None:
        return _fast_order(fast, key.descending[0])
    acc = _blocks.accessor(block)
    if acc.format == _blocks.ARROW:
        import pyarrow.compute as pc

        keys = [(c, "descending" if d else "ascending") for c, d in zip(key.columns, key.descending)]
        try:
            return pc.sort_indices(block, sort_keys=keys).to_numpy()  # nulls (and NaN) last by default
        except Exception as e:  # noqa: BLE001 - Arrow cannot order this type: say which column
            raise TypeError(_mixed_types_message(key, str(e))) from None
    if acc.format == _blocks.PANDAS:
        frame = block.reset_index(drop=True)
        try:
            ordered = frame.sort_values(
                list(key.columns), ascending=[not d for d in key.descending], na_position="last", kind="stable",
            )
        except TypeError as e:
            raise TypeError(_mixed_types_message(key, str(e))) from None
        return ordered.index.to_numpy()
    arrays = _key_arrays(block, key)
    try:
        return np.array(
            sorted(range(len(block)), key=lambda i: key.row_key(tuple(a[i] for a in arrays))), dtype=np.int64
        )
    except TypeError as e:
        raise TypeError(_mixed_types_message(key, str(e))) from None


def sort_block(block, key: SortKey):
    """``block``'s rows in key order (stable, nulls last)."""
    if not _blocks.num_rows(block):
        return block
    order = sort_indices(block, key)
    if _blocks.block_format(block) == _blocks.ROWS:
        return [block[i] for i in order]
    return _blocks.take_rows(block, order)


def cut_points(ordered, key: SortKey, boundaries: list[tuple]) -> list[int]:
    """Where a sorted block is cut: piece k (between cuts k-1 and k) holds the rows
    with ``boundaries[k-1] <= key < boundaries[k]`` in key order."""
    if not boundaries:
        return []
    fast = _fast_key(ordered, key)
    plain = all(isinstance(b[0], (int, float, np.integer, np.floating)) and not _blocks.is_null(b[0])
                for b in boundaries)
    if fast is not None and plain and _blocks.accessor(ordered).column(key.columns[0]).dtype.kind in "biuf":
        values = np.asarray([b[0] for b in boundaries])
        if key.descending[0]:
            return (len(fast) - np.searchsorted(fast[::-1], values, side="right")).tolist()
        return np.searchsorted(fast, values, side="left").tolist()
    row_keys = _RowKeys(ordered, key)
    try:
        return [bisect.bisect_left(row_keys, key.row_key(b)) for b in boundaries]
    except TypeError as e:
        raise TypeError(_mixed_types_message(key, str(e))) from None


def split_sorted(block, key: SortKey, boundaries: list[tuple]) -> list:
    """Sort ``block`` and cut it into ``len(boundaries) + 1`` pieces; piece k holds the
    rows with ``boundaries[k-1] <= key < boundaries[k]``."""
    ordered = sort_block(block, key)
    edges = [0, *cut_points(ordered, key, boundaries), _blocks.num_rows(ordered)]
    return [_blocks.slice_block(ordered, lo, hi) for lo, hi in zip(edges, edges[1:])]


def _partition_ids(block, key: SortKey, boundaries: list[tuple]) -> np.ndarray | None:
    """Each row's partition (the number of boundaries at or before its key in key
    order), for a fast-path key and plain numeric boundaries; else None."""
    plain = all(isinstance(b[0], (int, float, np.integer, np.floating)) and not _blocks.is_null(b[0])
                for b in boundaries)
    if not plain:
        return None
    values = _fast_key(block, key)
    if values is None or _blocks.accessor(block).column(key.columns[0]).dtype.kind not in "biuf":
        return None
    # Small integer types: numpy's stable sort of them is a radix sort.
    dtype = np.uint8 if len(boundaries) < 256 else np.uint16 if len(boundaries) < 65536 else np.int64
    ids = np.zeros(len(values), dtype=dtype)
    for bound in (b[0] for b in boundaries):
        # ascending: boundary <= key; descending: key <= boundary (key order reversed)
        ids += (values <= bound) if key.descending[0] else (values >= bound)
    return ids


def group_by_partition(block, key: SortKey, boundaries: list[tuple]) -> tuple:
    """The map side of a range partition: ``block`` reordered so partition k is rows
    ``offsets[k]:offsets[k + 1]``, and ``offsets``. A fast-path key is only grouped
    (a stable counting sort of partition numbers: no comparison sort); any other key
    sorts the block and cuts it by binary search."""
    size = _blocks.num_rows(block)
    ids = _partition_ids(block, key, boundaries) if size else None
    if ids is not None:
        order = np.argsort(ids, kind="stable")
        counts = np.bincount(ids, minlength=len(boundaries) + 1)
        offsets = np.concatenate(([0], np.cumsum(counts))).tolist()
        return _blocks.take_rows(block, order), offsets
    ordered = sort_block(block, key)
    return ordered, [0, *cut_points(ordered, key, boundaries), size]


def merge_partition(grouped: list, offsets: list[list[int]], key: SortKey, part: int):
    """The reduce side: partition ``part`` of every grouped block, joined and sorted."""
    pieces = [
        _blocks.slice_block(block, cuts[part], cuts[part + 1])
        for block, cuts in zip(grouped, offsets) if part + 1 < len(cuts) and cuts[part + 1] > cuts[part]
    ]
    if not pieces:
        return _blocks.slice_block(grouped[0], 0, 0) if grouped else _blocks.empty_block()
    return sort_block(_blocks.concat_blocks(pieces), key)


def partition_of(ordered_blocks: list, key: SortKey, boundaries: list[tuple], part: int):
    """Partition ``part`` of a range partition: from every sorted block the rows
    between boundary ``part - 1`` and boundary ``part``, joined and sorted."""
    pieces = []
    for block in ordered_blocks:
        size = _blocks.num_rows(block)
        if not size:
            continue
        bounds = [b for b in (boundaries[part - 1] if part > 0 else None,
                              boundaries[part] if part < len(boundaries) else None)]
        cuts = cut_points(block, key, [b for b in bounds if b is not None])
        lo = cuts.pop(0) if bounds[0] is not None else 0
        hi = cuts.pop(0) if bounds[1] is not None else size
        if hi > lo:
            pieces.append(_blocks.slice_block(block, lo, hi))
    if not pieces:
        return _blocks.slice_block(ordered_blocks[0], 0, 0) if ordered_blocks else _blocks.empty_block()
    return sort_block(_blocks.concat_blocks(pieces), key)


def key_runs(block, columns: tuple) -> list[tuple[int, int]]:
    """``(start, end)`` of each run of equal keys in a block sorted by ``columns``
    (all nulls of a column count as one key)."""
    size = _blocks.num_rows(block)
    if not size:
        return []
    changed = np.zeros(size - 1, dtype=bool)
    for column in columns:
        values = _blocks.column_array(block, column)
        nulls = _blocks.null_mask(values)
        differs = np.asarray(values[1:] != values[:-1], dtype=bool)
        changed |= (differs & ~(nulls[1:] & nulls[:-1])) | (nulls[1:] != nulls[:-1])
    starts = [0, *(np.flatnonzero(changed) + 1).tolist()]
    return list(zip(starts, [*starts[1:], size]))


# -- splitting by row index (split_at_indices, split_proportionately) ------------------


def index_ranges(indices, total: int) -> list[tuple[int, int]]:
    """The row ranges ``split_at_indices(indices)`` cuts ``total`` rows into."""
    if not isinstance(indices, (list, tuple)) or not all(isinstance(i, (int, np.integer)) for i in indices):
        raise ValueError(f"indices must be a list of ints, got {indices!r}")
    if any(i < 0 for i in indices):
        raise ValueError(f"indices must not be negative, got {list(indices)}")
    if list(indices) != sorted(indices):
        raise ValueError(f"indices must be in ascending order, got {list(indices)}")
    edges = [0, *(min(int(i), total) for i in indices), total]
    return list(zip(edges, edges[1:]))


def proportion_indices(proportions, total: int) -> list[int]:
    """Split points for ``split_proportionately``: split i ends at
    ``int(total * sum(proportions[:i+1]))``, moved on so no split is empty."""
    if not isinstance(proportions, (list, tuple)) or not proportions:
        raise ValueError(f"proportions must be a non-empty list of floats, got {proportions!r}")
    if any(not isinstance(p, (int, float)) or p <= 0 for p in proportions):
        raise ValueError(f"every proportion must be a number above 0, got {list(proportions)}")
    if sum(proportions) >= 1:
        raise ValueError(
            f"proportions must sum to less than 1 (the last split takes the rest), got "
            f"{list(proportions)} = {sum(proportions)}"
        )
    indices, cumulative = [], 0.0
    for p in proportions:
        cumulative += p
        indices.append(max(int(total * cumulative), indices[-1] + 1 if indices else 1))
    if indices[-1] >= total:
        raise ValueError(
            f"cannot split {total} rows by {list(proportions)} with at least one row per split"
        )
    return indices
