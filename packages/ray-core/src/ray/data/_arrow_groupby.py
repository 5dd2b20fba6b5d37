"""``groupby(...).aggregate(...)`` with Arrow's hash aggregation: partials, then a combine.

For the built-in aggregations (``Count``, ``Sum``, ``Mean``, ``Min``, ``Max``,
``Std``) over columns Arrow can aggregate:

1. every block is reduced to one row per key (``partial``): ``Table.group_by(keys)
   .aggregate(...)`` computes, per aggregation, the pieces that merge exactly: counts
   of values and of nulls, sums, minima, maxima, and for ``Std`` the count, mean and
   sum of squared deviations (M2); the partial is sorted by key;
2. output partition k (``combine``) takes, from every partial, the keys between
   boundaries k-1 and k (binary search: the partials are sorted), finds the runs of
   equal keys and merges the pieces run by run with numpy (``Std`` with Chan et al.'s
   pairwise formula), then finalizes.

So only the partials (one row per key and block) move, not the rows. NaN counts as
null, as everywhere in ``ray.data``'s aggregations; null keys form one group, last.
Other aggregations (``AggregateFn``) and columns Arrow cannot hold go through the
sort-based path in ``_shuffle``.

Pure: no ray (the tasks in ``_shuffle`` call these).
"""

from __future__ import annotations

import numpy as np

from ray.data import _blocks, _sort
from ray.data.aggregate import AggregateFn, Count, Max, Mean, Min, Std, Sum

_SUMMABLE = "biuf"


def supports(aggs: tuple, schema) -> bool:
    """Whether every aggregation is a built-in this module merges, over a column
    whose type (from ``schema``, an Arrow or pandas schema) it can aggregate."""
    if _blocks.pyarrow_or_none() is None or schema is None:
        return False
    types = dict(zip(schema.names, schema.types))
    for agg in aggs:
        if type(agg) not in (Count, Sum, Mean, Min, Max, Std):
            return False
        if agg.on is None:
            continue
        kind = _kind(types.get(agg.on))
        if kind is None or (kind not in _SUMMABLE and not isinstance(agg, (Count, Min, Max))):
            return False
    return True


def _kind(type_) -> str | None:
    """A numpy-like kind letter for an Arrow type or a pandas dtype name (None: not
    one this module aggregates)."""
    pa = _blocks.pyarrow_or_none()
    if isinstance(type_, pa.DataType):
        if pa.types.is_boolean(type_):
            return "b"
        if pa.types.is_integer(type_):
            return "i"
        if pa.types.is_floating(type_):
            return "f"
        if pa.types.is_timestamp(type_) or pa.types.is_date(type_) or pa.types.is_duration(type_):
            return "M"
        if pa.types.is_string(type_) or pa.types.is_large_string(type_):
            return "U"
        return None
    name = str(type_)
    if name in ("bool", "boolean"):
        return "b"
    if name.startswith(("int", "uint", "Int", "UInt")):
        return "i"
    if name.startswith(("float", "Float")):
        return "f"
    if name.startswith(("datetime64", "timedelta64")):
        return "M"
    if name in ("str", "string"):
        return "U"
    return None


# -- 1. per block ------------------------------------------------------------------------


def _specs(aggs: tuple) -> list[tuple]:
    """Arrow hash aggregations, per aggregation: (part name, column, function, options)."""
    import pyarrow.compute as pc

    valid, nulls = pc.CountOptions(mode="only_valid"), pc.CountOptions(mode="only_null")
    specs = []
    for i, agg in enumerate(aggs):
        if isinstance(agg, Count):
            if agg.on is None or not agg.ignore_nulls:
                specs.append((f"{i}n", None, "count_all", None))
            else:
                specs.append((f"{i}n", agg.on, "count", valid))
            continue
        specs += [(f"{i}n", agg.on, "count", valid), (f"{i}z", agg.on, "count", nulls)]
        if isinstance(agg, Sum):  # Mean too
            specs.append((f"{i}s", agg.on, "sum", pc.ScalarAggregateOptions(min_count=0)))
        elif isinstance(agg, (Min, Max)):
            specs.append((f"{i}v", agg.on, "min" if isinstance(agg, Min) else "max", None))
        elif isinstance(agg, Std):
            specs += [(f"{i}m", agg.on, "mean", None),
                      (f"{i}q", agg.on, "variance", pc.VarianceOptions(ddof=0))]
    return specs


def _nan_as_null(column):
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_floating(column.type) and column.null_count < len(column):
        nans = pc.is_nan(column)
        if pc.any(nans).as_py():
            return pc.if_else(nans, pa.scalar(None, column.type), column)
    return column


def partial(block, key_columns: tuple, aggs: tuple):
    """One row per key of ``block``: the keys, then the pieces of every aggregation
    (columns named ``<agg index><piece>``), sorted by key."""
    import pyarrow as pa

    needed = list(dict.fromkeys([*key_columns, *(a.on for a in aggs if a.on is not None)]))
    table = _blocks.to_arrow_block(_blocks.select_columns(block, needed))
    table = pa.Table.from_arrays([_nan_as_null(c) for c in table.columns], names=table.column_names)
    specs = _specs(aggs)
    # Each piece reads its own alias of the column, so the outputs have unique names.
    sources = table
    requests = []
    for name, column, function, options in specs:
        if column is None:
            requests.append(([], function, options))
            continue
        alias = f"__{name}"
        sources = sources.append_column(alias, table.column(column))
        requests.append((alias, function, options))
    grouped = sources.group_by(list(key_columns), use_threads=False).aggregate(requests)
    outputs = {}
    for (name, column, function, _), request in zip(specs, requests):
        outputs[name] = grouped.column("count_all" if column is None else f"{request[0]}_{function}")
    keys = {c: grouped.column(c) for c in key_columns}
    result = pa.table({**keys, **outputs})
    return _sort.sort_block(result, _sort.SortKey.of(list(key_columns)))


# -- 2. per output partition -------------------------------------------------------------


def combine(table, key_columns: tuple, aggs: tuple):
    """Merge the rows of equal keys of ``table`` (partials joined and sorted by key)
    and finalize: one row per key."""
    import pyarrow as pa

    table = _blocks.to_arrow_block(table)
    runs = _sort.key_runs(table, key_columns)
    if not runs:
        return _empty_result(table, key_columns, aggs)
    starts = np.array([s for s, _ in runs], dtype=np.int64)
    columns = {c: table.column(c).take(starts) for c in key_columns}
    for i, agg in enumerate(aggs):
        columns[agg.name] = _finalize(agg, i, table, starts)
    return pa.table(columns)


def _empty_result(table, key_columns, aggs):
    import pyarrow as pa

    columns = {c: table.column(c) if c in table.column_names else pa.array([]) for c in key_columns}
    for agg in aggs:
        columns[agg.name] = pa.array([], type=pa.int64() if isinstance(agg, Count) else pa.float64())
    return pa.table(columns)


def _sums(table, name: str, starts: np.ndarray) -> np.ndarray:
    values = table.column(name).fill_null(0).to_numpy()
    if values.dtype.kind == "b":
        values = values.astype(np.int64)
    return np.add.reduceat(values, starts)


def _finalize(agg: AggregateFn, i: int, table, starts: np.ndarray):
    import pyarrow as pa

    count = _sums(table, f"{i}n", starts)
    if isinstance(agg, Count):
        return pa.array(count, type=pa.int64())
    saw_null = _sums(table, f"{i}z", starts) > 0
    empty = (count == 0) | (saw_null & (not agg.ignore_nulls))
    if isinstance(agg, Sum):  # and Mean
        total = _sums(table, f"{i}s", starts)
        if isinstance(agg, Mean):
            values = total / np.maximum(count, 1)
        else:
            values = total
        return pa.array(values, mask=empty)
    if isinstance(agg, (Min, Max)):
        return _extremes(table.column(f"{i}v"), starts, agg, empty)
    return pa.array(_std(table, i, starts, count, agg.ddof), mask=empty)


def _extremes(column, starts: np.ndarray, agg, empty: np.ndarray):
    import pyarrow as pa
    import pyarrow.compute as pc

    smallest = isinstance(agg, Min)
    if pa.types.is_integer(column.type) or pa.types.is_floating(column.type):
        dtype = column.type.to_pandas_dtype()
        if pa.types.is_floating(column.type):
            fill = np.inf if smallest else -np.inf
        else:
            fill = np.iinfo(dtype).max if smallest else np.iinfo(dtype).min
        values = column.fill_null(pa.scalar(fill, column.type)).to_numpy()
        reduced = (np.minimum if smallest else np.maximum).reduceat(values, starts)
        return pa.array(reduced, mask=empty, type=column.type)
    # Other types (strings, dates, bools): one Arrow reduction per run of keys.
    ends = np.append(starts[1:], len(column)).tolist()
    pick = pc.min if smallest else pc.max
    values = [pick(column.slice(s, e - s)).as_py() for s, e in zip(starts.tolist(), ends)]
    return pa.array([None if gone else v for v, gone in zip(values, empty.tolist())], type=column.type)


def _std(table, i: int, starts: np.ndarray, count: np.ndarray, ddof: int) -> np.ndarray:
    n = table.column(f"{i}n").to_numpy().astype(np.float64)
    means = table.column(f"{i}m").fill_null(0.0).to_numpy()
    m2 = table.column(f"{i}q").fill_null(0.0).to_numpy() * n
    totals = np.add.reduceat(n, starts)
    mean = np.add.reduceat(n * means, starts) / np.maximum(totals, 1)
    lengths = np.diff(np.append(starts, len(n)))
    spread = n * (means - np.repeat(mean, lengths)) ** 2
    merged = np.add.reduceat(m2 + spread, starts)
    out = np.zeros(len(starts))
    enough = count - ddof > 0
    out[enough] = np.sqrt(merged[enough] / (count[enough] - ddof))
    return out


def expected_columns(key_columns: tuple, aggs: tuple) -> list:
    return [*key_columns, *(a.name for a in aggs)]

