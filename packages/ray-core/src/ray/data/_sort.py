"""The decisions behind ``Dataset.sort`` and ``Dataset.groupby``: pure, no ray.

A distributed sort in three rounds of tasks (``Dataset._range_partition`` runs them):

1. every block samples a few of its rows' keys (``sample_keys``);
2. the driver sorts the samples and picks ``num_parts - 1`` boundaries at even
   quantiles (``choose_boundaries``);
3. every block sorts itself and cuts at the boundaries (``split_sorted``), and
   output block k joins the k-th pieces of every block and sorts them
   (``sort_block``).

Piece k holds the rows whose key is >= boundary k-1 and < boundary k, so equal keys
always land in the same output block: groupby relies on that, aggregating each
sorted output block run by run (``key_runs``).

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


class _RowKeys(Sequence):
    """The row keys of a sorted block, built only for the rows bisect looks at."""

    def __init__(self, block, key: SortKey):
        self._arrays, self._key = _key_arrays(block, key), key
        self._len = _blocks.num_rows(block)

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, i):
        return self._key.row_key(tuple(a[i] for a in self._arrays))


def sample_keys(block, key: SortKey, count: int, seed) -> list[tuple]:
    """The keys of up to ``count`` random rows of ``block``."""
    size = _blocks.num_rows(block)
    if not size:
        return []
    rows = np.random.default_rng(seed).choice(size, size=min(count, size), replace=False)
    arrays = _key_arrays(block, key)
    return [tuple(_blocks.python_scalar(a[i]) for a in arrays) for i in sorted(rows)]


def choose_boundaries(samples: list[tuple], key: SortKey, num_parts: int) -> list[tuple]:
    """``num_parts - 1`` sample keys at even quantiles, in key order (fewer when there
    are fewer samples; then some output blocks stay empty)."""
    if num_parts < 1:
        raise ValueError(f"num_parts must be positive, got {num_parts}")
    ordered = _sorted_checked(samples, key)
    if not ordered:
        return []
    return [ordered[len(ordered) * k // num_parts] for k in range(1, num_parts)]


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


def sort_block(block, key: SortKey):
    """``block``'s rows in key order (stable)."""
    if not _blocks.num_rows(block):
        return block
    if _blocks.is_pandas(block):
        try:
            return block.sort_values(
                list(key.columns), ascending=[not d for d in key.descending],
                na_position="last", kind="stable", ignore_index=True,
            )
        except TypeError as e:
            raise TypeError(_mixed_types_message(key, str(e))) from None
    arrays = _key_arrays(block, key)
    try:
        order = sorted(range(len(block)), key=lambda i: key.row_key(tuple(a[i] for a in arrays)))
    except TypeError as e:
        raise TypeError(_mixed_types_message(key, str(e))) from None
    return [block[i] for i in order]


def split_sorted(block, key: SortKey, boundaries: list[tuple]) -> list:
    """Sort ``block`` and cut it into ``len(boundaries) + 1`` pieces; piece k holds the
    rows with ``boundaries[k-1] <= key < boundaries[k]``."""
    ordered = sort_block(block, key)
    row_keys = _RowKeys(ordered, key)
    try:
        cuts = [bisect.bisect_left(row_keys, key.row_key(b)) for b in boundaries]
    except TypeError as e:
        raise TypeError(_mixed_types_message(key, str(e))) from None
    edges = [0, *cuts, _blocks.num_rows(ordered)]
    return [_blocks.slice_block(ordered, lo, hi) for lo, hi in zip(edges, edges[1:])]


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
