"""ray.data sort, groupby, aggregates, splits, zip and file formats: the pure decision
functions first, then on one module-scoped 2-CPU cluster, every result checked against
pandas or plain Python on small data."""

from __future__ import annotations

import itertools
import json
import math
import os

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ray
from ray.data import _blocks, _formats, _sort
from ray.data._transforms import AggregateGroups
from ray.data.aggregate import AggregateFn, Count, Max, Mean, Min, Std, Sum

# -- pure: sort keys, boundaries, partitions, runs ---------------------------------------


def test_sort_key_validates_keys_and_directions():
    assert _sort.SortKey.of("a") == _sort.SortKey(("a",), (False,))
    assert _sort.SortKey.of(["a", "b"], [True, False]).descending == (True, False)
    assert _sort.SortKey.of(["a", "b"], True).descending == (True, True)
    with pytest.raises(ValueError, match="one per column"):
        _sort.SortKey.of(["a", "b"], [True])
    with pytest.raises(ValueError, match="column name or a non-empty list"):
        _sort.SortKey.of([])
    with pytest.raises(ValueError, match=r"columns: \['alpha', 'b'\]\)\. Did you mean 'alpha'"):
        _sort.SortKey.of("alpah").check_columns(["alpha", "b"], "sort")


def test_row_keys_order_descending_strings_and_put_nulls_last():
    key = _sort.SortKey.of(["s", "x"], [True, False])
    rows = [("b", 2), ("a", None), (None, 1), ("b", 1), ("a", 0)]
    assert sorted(rows, key=key.row_key) == [("b", 1), ("b", 2), ("a", 0), ("a", None), (None, 1)]
    nan_last = _sort.SortKey.of("x", True)
    assert [v for (v,) in sorted([(1.0,), (float("nan"),), (3.0,)], key=nan_last.row_key)][:2] == [3.0, 1.0]


def test_boundaries_split_blocks_so_equal_keys_share_a_partition():
    key = _sort.SortKey.of("k")
    samples = [(v,) for v in [5, 1, 9, 3, 7, 3, 3, 8]]
    boundaries = _sort.choose_boundaries(samples, key, 4)
    assert boundaries == [(3,), (5,), (8,)]
    block = pd.DataFrame({"k": [9, 3, 1, 3, 8, 5, 2, None]})
    pieces = _sort.split_sorted(block, key, boundaries)
    assert [p["k"].tolist() for p in pieces[:3]] == [[1.0, 2.0], [3.0, 3.0], [5.0]]
    assert pieces[3]["k"].tolist()[:2] == [8.0, 9.0] and math.isnan(pieces[3]["k"].iloc[2])
    assert _sort.choose_boundaries([], key, 3) == []
    assert _sort.given_boundaries([7, 2], key) == [(2,), (7,)]


def test_sort_and_runs_on_row_list_blocks_match_pandas():
    rows = [{"k": k, "v": i} for i, k in enumerate(["b", None, "a", "b", "a", "c"])]
    key = _sort.SortKey.of("k", True)
    ordered = _sort.sort_block(rows, key)
    assert [r["k"] for r in ordered] == ["c", "b", "b", "a", "a", None]
    assert [r["v"] for r in ordered] == [5, 0, 3, 2, 4, 1]  # stable
    assert _sort.key_runs(ordered, ("k",)) == [(0, 1), (1, 3), (3, 5), (5, 6)]
    frame = pd.DataFrame({"k": [1.0, 1.0, np.nan, np.nan, 2.0]})
    assert _sort.key_runs(frame, ("k",)) == [(0, 2), (2, 4), (4, 5)]
    with pytest.raises(TypeError, match="one comparable type"):
        _sort.sort_block([{"k": 1}, {"k": "x"}], _sort.SortKey.of("k"))


_key_values = st.one_of(st.none(), st.integers(-3, 3))


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.one_of(
        st.floats(allow_nan=False),  # infinities, subnormals, -0.0
        st.sampled_from([0.0, -0.0, 1.0, 1.0 + 2**-52, 1.0 + 2**-51]),  # ties, low-bit neighbours
    ), min_size=2, max_size=300),
    descending=st.booleans(),
)
def test_float_sort_order_is_numpys_stable_argsort(values, descending):
    keys = np.asarray(values, dtype=np.float64)
    got = _sort._fast_order(keys, descending)
    expected = np.argsort(-keys if descending else keys, kind="stable")
    assert got.tolist() == expected.tolist()


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.tuples(_key_values, st.sampled_from(["a", "b", None])), max_size=25),
    bounds=st.lists(st.tuples(_key_values, st.sampled_from(["a", "b", None])), max_size=4),
    descending=st.tuples(st.booleans(), st.booleans()),
    as_frame=st.booleans(),
)
def test_split_sorted_pieces_are_ordered_and_respect_boundaries(rows, bounds, descending, as_frame):
    key = _sort.SortKey(("x", "s"), descending)
    records = [{"x": x, "s": s} for x, s in rows]
    block = pd.DataFrame(records, columns=["x", "s"], dtype=object) if as_frame else records
    boundaries = _sort.given_boundaries(bounds, key)
    pieces = _sort.split_sorted(block, key, boundaries)
    assert len(pieces) == len(boundaries) + 1

    def keys(piece):
        return [key.row_key((r["x"], r["s"])) for r in _blocks.iter_rows(piece)]

    joined = [k for piece in pieces for k in keys(piece)]
    assert joined == sorted(key.row_key(r) for r in rows)  # the pieces, in order, are the sorted block
    for i, piece in enumerate(pieces):
        for k in keys(piece):
            assert i == 0 or key.row_key(boundaries[i - 1]) <= k
            assert i == len(boundaries) or k < key.row_key(boundaries[i])
    runs = _sort.key_runs(_blocks.concat_blocks(pieces), ("x", "s"))
    assert [end - start for start, end in runs] == [
        sum(1 for _ in group) for _, group in itertools.groupby(joined)]


def test_split_indices_and_proportions_follow_ray():
    assert _sort.index_ranges([2, 5, 50], 10) == [(0, 2), (2, 5), (5, 10), (10, 10)]
    assert _sort.proportion_indices([0.2, 0.5], 10) == [2, 7]
    assert _sort.proportion_indices([0.01, 0.01], 10) == [1, 2]  # no split is empty
    with pytest.raises(ValueError, match="ascending"):
        _sort.index_ranges([5, 2], 10)
    with pytest.raises(ValueError, match="sum to less than 1"):
        _sort.proportion_indices([0.5, 0.5], 10)
    with pytest.raises(ValueError, match="at least one row per split"):
        _sort.proportion_indices([0.4, 0.4], 2)


# -- pure: aggregations ------------------------------------------------------------------


def _fold(agg, *blocks):
    """Accumulate each block separately, then merge: what the tasks and driver do."""
    acc = agg.init(None)
    for block in blocks:
        acc = agg.merge(acc, agg.accumulate_group(agg.init(None), _blocks.Group(block, 0, len(block))))
    return agg.finalize(acc)


def test_builtin_aggregations_merge_partials_like_one_pass():
    values = np.random.default_rng(3).normal(size=50) * 10
    parts = [pd.DataFrame({"x": values[a:b]}) for a, b in [(0, 7), (7, 7), (7, 31), (31, 50)]]
    assert _fold(Std("x"), *parts) == pytest.approx(np.std(values, ddof=1))
    assert _fold(Std("x", ddof=0), *parts) == pytest.approx(np.std(values))
    assert _fold(Mean("x"), *parts) == pytest.approx(values.mean())
    assert (_fold(Min("x"), *parts), _fold(Max("x"), *parts)) == (values.min(), values.max())
    assert _fold(Std("x"), pd.DataFrame({"x": [4.0]})) == 0.0  # fewer than ddof + 1 values, as Ray
    nulls = pd.DataFrame({"x": [1.0, np.nan, 3.0]})
    assert (_fold(Sum("x"), nulls), _fold(Sum("x", ignore_nulls=False), nulls)) == (4.0, None)
    assert (_fold(Count("x", ignore_nulls=True), nulls), _fold(Count(), nulls)) == (2, 3)
    assert _fold(Mean("x"), pd.DataFrame({"x": [np.nan]})) is None
    assert Std("x").name == "std(x)" and Count().name == "count()" and Sum("x", alias_name="t").name == "t"


def test_grouped_numeric_columns_fold_all_runs_at_once_like_pandas():
    frame = pd.DataFrame({
        "k": [1, 1, 2, 2, 2, 3],
        "f": [0.5, np.nan, np.nan, np.nan, np.nan, 2.0],
        "i": [4, -1, 7, 7, 0, 9],
        "b": [True, True, False, True, False, False],
    })
    aggs = (Count("f", ignore_nulls=True), Sum("f"), Min("f"), Std("f", ignore_nulls=False), Max("i"),
            Std("i", ddof=0), Sum("b"), Mean("b"))
    got = _blocks.to_pandas_block(AggregateGroups(("k",), aggs)(frame))
    grouped = frame.groupby("k")
    assert got["k"].tolist() == [1, 2, 3] and got["count(f)"].tolist() == [1, 0, 1]
    assert got["sum(f)"].tolist()[0::2] == [0.5, 2.0] and np.isnan(got["sum(f)"][1])  # no values: None
    assert got["min(f)"].tolist()[0::2] == [0.5, 2.0] and got["std(f)"].isna().tolist() == [True, True, False]
    assert got["max(i)"].tolist() == grouped["i"].max().tolist()
    assert got["std(i)"].tolist() == pytest.approx(grouped["i"].std(ddof=0).tolist())
    assert got["sum(b)"].tolist() == [2, 1, 0] and got["mean(b)"].tolist() == pytest.approx([1.0, 1 / 3, 0.0])


def test_aggregation_arguments_are_checked():
    with pytest.raises(ValueError, match="exactly one of accumulate_row"):
        AggregateFn(init=lambda k: 0, merge=lambda a, b: a + b)
    old_spelling = AggregateFn(init=lambda k: 0, accumulate=lambda a, row: a + row["x"], merge=lambda a, b: a + b)
    assert _fold(old_spelling, pd.DataFrame({"x": [1, 2]}), pd.DataFrame({"x": [3]})) == 6
    with pytest.raises(ValueError, match=r"Sum\(on='column'\)"):
        Sum()
    with pytest.raises(ValueError, match="ddof"):
        Std("x", ddof=-1)
    with pytest.raises(TypeError, match="column 's' is not numeric"):
        _fold(Sum("s"), pd.DataFrame({"s": ["a", "b"]}))


def test_aggregate_groups_without_pandas_or_pyarrow_uses_row_lists(monkeypatch):
    monkeypatch.setattr(_formats, "_optional_module", lambda name: None)
    rows = [{"k": k, "v": v} for k, v in [("a", 1), ("a", 3), ("b", None), ("b", 5)]]
    out = AggregateGroups(("k",), (Count(), Sum("v"), Mean("v")))(rows)
    assert out == [{"k": "a", "count()": 2, "sum(v)": 4, "mean(v)": 2.0},
                   {"k": "b", "count()": 2, "sum(v)": 5, "mean(v)": 5.0}]


# -- on a cluster ------------------------------------------------------------------------


def _frame(n: int = 240, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "k": rng.integers(0, 9, n),
        "s": rng.choice(["ant", "bee", "cat", "dog"], n),
        "v": rng.normal(size=n).round(3),
    })
    frame.loc[rng.choice(n, 12, replace=False), "v"] = np.nan
    return frame


def _stored_blocks(ds) -> list:
    return [ray.get(ref) for ref in ds.get_internal_block_refs()]


def _dataset(frame: pd.DataFrame):
    """Several blocks of uneven size, one of them empty."""
    cuts = [0, 30, 30, 110, 170, len(frame)]
    return ray.data.from_pandas([frame.iloc[a:b] for a, b in zip(cuts, cuts[1:])])


def test_sort_multi_key_descending_with_nulls_matches_pandas(ray_module):
    frame = _frame()
    ds = _dataset(frame)
    got = ds.sort(["s", "v"], descending=[True, False])
    expected = frame.sort_values(["s", "v"], ascending=[False, True], na_position="last", kind="stable")
    pd.testing.assert_frame_equal(got.to_pandas()[["s", "v"]], expected[["s", "v"]].reset_index(drop=True))
    # a real range partition: several non-empty output blocks, in order between blocks
    blocks = [b for b in _stored_blocks(got) if _blocks.num_rows(b)]
    assert len(blocks) >= 2 and sum(map(_blocks.num_rows, blocks)) == len(frame)
    assert ds.sort("v", descending=True).take(1)[0]["v"] == frame["v"].max()
    assert [r["id"] for r in ray.data.range(50, override_num_blocks=5).sort("id", descending=True).take(3)] == [49, 48, 47]
    by_bounds = ds.sort("k", boundaries=[3, 6])
    assert [_blocks.num_rows(b) for b in _stored_blocks(by_bounds)] == [int((frame.k < 3).sum()), int(frame.k.between(3, 5).sum()),
                                                            int((frame.k >= 6).sum())]
    with pytest.raises(ValueError, match=r"no column 'vv'.*columns: \['k', 's', 'v'\]"):
        ds.sort("vv")
    assert ray.data.from_items([]).sort("x").count() == 0


def test_groupby_aggregates_match_pandas_across_partitions(ray_module):
    frame = _frame()
    ds = _dataset(frame)
    got = ds.groupby("k").aggregate(Count(), Sum("v"), Min("v"), Max("v"), Mean("v"), Std("v"), Min("s")).to_pandas()
    grouped = frame.groupby("k")
    expected = pd.DataFrame({
        "k": sorted(frame["k"].unique()),
        "count()": grouped.size().values,
        "sum(v)": grouped["v"].sum().values,
        "min(v)": grouped["v"].min().values,
        "max(v)": grouped["v"].max().values,
        "mean(v)": grouped["v"].mean().values,
        "std(v)": grouped["v"].std().values,
        "min(s)": grouped["s"].min().values,
    })
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)
    split = ds.groupby("k", num_partitions=3)
    partitions = [b for b in _stored_blocks(split.count()) if _blocks.num_rows(b)]
    assert len(partitions) >= 2  # the keys landed in several partitions, each key once
    pd.testing.assert_frame_equal(split.aggregate(Count(), Mean("v")).to_pandas(),
                                  expected[["k", "count()", "mean(v)"]], check_dtype=False)
    # Without num_partitions, few groups combine in one task (one output block).
    assert len(_stored_blocks(ds.groupby("k").count())) == 1

    assert ds.groupby("k").std("v", ddof=0).to_pandas()["std(v)"].tolist() == pytest.approx(
        grouped["v"].std(ddof=0).tolist())
    assert ds.groupby("s").sum().columns() == ["s", "sum(k)", "sum(v)"]
    assert ds.groupby("s").max(["k", "v"], ignore_nulls=False).to_pandas()["max(v)"].isna().any()


def test_groupby_combines_into_one_part_per_250k_groups():
    from ray.data._shuffle import COMBINE_ROWS_PER_PART, combine_parts

    assert combine_parts([1000] * 8, 8) == 1
    assert combine_parts([0] * 4, 4) == 1
    assert combine_parts([COMBINE_ROWS_PER_PART] * 3, 8) == 3
    assert combine_parts([COMBINE_ROWS_PER_PART + 1, 0], 8) == 2
    assert combine_parts([10 * COMBINE_ROWS_PER_PART] * 8, 8) == 8  # at most one per input block


def test_groupby_multiple_keys_null_keys_and_no_key(ray_module):
    frame = _frame()
    ds = _dataset(frame)
    got = ds.groupby(["s", "k"]).count().to_pandas()
    expected = frame.groupby(["s", "k"]).size().reset_index(name="count()")
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)
    with_null_keys = ray.data.from_items([{"g": g, "x": i} for i, g in enumerate(["b", None, "a", None, "b"])])
    assert with_null_keys.groupby("g").sum("x").take_all() == [
        {"g": "a", "sum(x)": 2}, {"g": "b", "sum(x)": 4}, {"g": None, "sum(x)": 4}]
    assert ds.groupby(None).aggregate(Count(), Max("k")).take_all() == [{"count()": len(frame), "max(k)": frame.k.max()}]
    with pytest.raises(ValueError, match="Did you mean 'k'"):
        ds.groupby("kk")


def test_sort_and_groupby_on_dates_keep_the_dtype(ray_module):
    days = np.random.default_rng(1).integers(0, 10, 50)
    frame = pd.DataFrame({"t": pd.Timestamp("2024-01-01") + pd.to_timedelta(days, unit="D"), "v": np.arange(50)})
    frame.loc[3, "t"] = pd.NaT
    ds = ray.data.from_pandas([frame.iloc[:20], frame.iloc[20:]])
    expected = frame.sort_values("t", ascending=False, na_position="last", kind="stable")["t"]
    pd.testing.assert_series_equal(ds.sort("t", descending=True).to_pandas()["t"], expected.reset_index(drop=True))
    counts = frame.groupby("t", dropna=False).size().reset_index(name="count()")
    pd.testing.assert_frame_equal(ds.groupby("t").count().to_pandas(), counts)


def test_map_groups_in_pandas_numpy_and_actors(ray_module):
    frame = _frame()
    ds = _dataset(frame)

    def demean(group: pd.DataFrame) -> pd.DataFrame:
        return group.assign(v=group["v"] - group["v"].mean())

    got = ds.groupby("s").map_groups(demean, batch_format="pandas").to_pandas()
    expected = frame.assign(v=frame["v"] - frame.groupby("s")["v"].transform("mean"))
    expected = expected.sort_values("s", kind="stable").reset_index(drop=True)
    pd.testing.assert_frame_equal(got.sort_values(["s", "k", "v"], ignore_index=True),
                                  expected.sort_values(["s", "k", "v"], ignore_index=True))
    sizes = ds.groupby("k").map_groups(lambda b: {"k": b["k"][:1], "n": np.array([len(b["k"])])})
    assert {r["k"]: r["n"] for r in sizes.take_all()} == frame["k"].value_counts().to_dict()

    class Top:
        def __init__(self, n):
            self.n = n

        def __call__(self, group):
            return group.nlargest(self.n, "v")

    top = ds.groupby("s").map_groups(Top, fn_constructor_args=(1,), batch_format="pandas", concurrency=1)
    assert top.to_pandas()["v"].tolist() == frame.groupby("s")["v"].max().tolist()


def test_dataset_aggregate_std_unique(ray_module):
    frame = _frame()
    ds = _dataset(frame)
    product = AggregateFn(init=lambda k: 1, accumulate_row=lambda a, row: a * (row["k"] + 1),
                          merge=lambda a, b: a * b, name="prod")
    sums = AggregateFn(init=lambda k: 0, accumulate_block=lambda a, block: a + int(block["k"].sum()),
                       merge=lambda a, b: a + b, finalize=lambda a: -a, name="neg_sum")
    got = ds.aggregate(Count(), Mean("v"), product, sums)
    assert got == {"count()": len(frame), "mean(v)": pytest.approx(frame.v.mean()),
                   "prod": math.prod(int(k) + 1 for k in frame.k), "neg_sum": -int(frame.k.sum())}
    assert ds.std("v") == pytest.approx(frame.v.std()) and ds.std("v", ddof=0) == pytest.approx(frame.v.std(ddof=0))
    assert ds.std(["k", "v"]) == {"std(k)": pytest.approx(frame.k.std()), "std(v)": pytest.approx(frame.v.std())}
    assert ds.unique("s") == sorted(frame.s.unique()) and ds.unique("k") == sorted(frame.k.unique())
    assert ds.min("s") == "ant"
    with pytest.raises(TypeError, match="ray.data.aggregate objects"):
        ds.aggregate("sum")
    with pytest.raises(ValueError, match="Did you mean 'v'"):
        ds.aggregate(Sum("vv"))
    with pytest.raises(TypeError, match="'s' is not numeric"):
        ds.sum("s")


def test_zip_splits_rename_and_random_sample(ray_module):
    left = ray.data.range(20, override_num_blocks=3)
    right = ray.data.from_items([{"id": i, "sq": i * i} for i in range(20)], override_num_blocks=4)
    zipped = left.zip(right)
    assert zipped.num_blocks() == 3
    assert zipped.take_all() == [{"id": i, "id_1": i, "sq": i * i} for i in range(20)]
    with pytest.raises(ValueError, match="same number of rows"):
        left.zip(ray.data.range(3))

    ds = ray.data.range(10, override_num_blocks=3)
    assert [[r["id"] for r in d.take_all()] for d in ds.split_at_indices([2, 5, 12])] == [
        [0, 1], [2, 3, 4], [5, 6, 7, 8, 9], []]
    assert [d.count() for d in ds.split_proportionately([0.2, 0.5])] == [2, 5, 3]
    train, test = ds.train_test_split(0.25)
    assert ([r["id"] for r in test.take_all()], train.count()) == ([7, 8, 9], 7)  # train: int(10 * 0.75)
    train, test = ds.train_test_split(3, shuffle=True, seed=4)
    ids = [r["id"] for r in train.take_all() + test.take_all()]
    assert test.count() == 3 and sorted(ids) == list(range(10)) and ids != list(range(10))
    with pytest.raises(ValueError, match="test_size"):
        ds.train_test_split(10)

    renamed = ray.data.from_items([{"a": 1, "b": 2}]).rename_columns({"a": "x"})
    assert renamed.take_all() == [{"x": 1, "b": 2}]
    assert renamed.rename_columns(["p", "q"]).columns() == ["p", "q"]
    with pytest.raises(ValueError, match="Did you mean 'x'"):
        renamed.rename_columns({"xx": "y"})

    big = ray.data.range(4000, override_num_blocks=4)
    sample = [r["id"] for r in big.random_sample(0.1, seed=7).take_all()]
    assert 300 < len(sample) < 500 and sample == sorted(set(sample))
    assert [r["id"] for r in big.random_sample(0.1, seed=7).take_all()] == sample
    with pytest.raises(ValueError, match="between 0 and 1"):
        big.random_sample(1.5)


def test_json_text_numpy_round_trips(ray_module, tmp_path):
    frame = _frame(60)
    ray.data.from_pandas(frame, override_num_blocks=3).write_json(str(tmp_path / "js"))
    assert sorted(p.suffix for p in (tmp_path / "js").iterdir()) == [".json"] * 3
    back = ray.data.read_json(str(tmp_path / "js")).to_pandas()
    pd.testing.assert_frame_equal(back, frame)
    rows = [{"a": 1, "b": None}, {"a": 2, "b": "x"}]
    (tmp_path / "array.json").write_text(json.dumps(rows))
    pd.testing.assert_frame_equal(ray.data.read_json(f"local://{tmp_path / 'array.json'}").to_pandas(), pd.DataFrame(rows))
    (tmp_path / "bad.json").write_text('{"a": 1}\n{"a": \n')
    with pytest.raises(ValueError, match="line 2 is not JSON"):
        ray.data.read_json(str(tmp_path / "bad.json")).count()

    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "one.txt").write_text("alpha\n\nbeta\n")
    (tmp_path / "t" / "two.txt").write_text("gamma\n")
    texts = ray.data.read_text(str(tmp_path / "t"))
    assert [r["text"] for r in texts.take_all()] == ["alpha", "", "beta", "gamma"]
    assert ray.data.read_text(str(tmp_path / "t"), drop_empty_lines=True).count() == 3

    tensors = np.arange(24, dtype=np.float32).reshape(6, 2, 2)
    ray.data.from_numpy(tensors).repartition(2).write_numpy(str(tmp_path / "np"), column="data")
    assert len(os.listdir(tmp_path / "np")) == 2
    loaded = ray.data.read_numpy(str(tmp_path / "np"))
    np.testing.assert_array_equal(np.concatenate([b["data"] for b in loaded.iter_batches(batch_size=None)]), tensors)


def test_parquet_round_trip_or_clear_error_without_pyarrow(ray_module, tmp_path):
    frame = _frame(40)
    ds = ray.data.from_pandas(frame, override_num_blocks=2)
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        for call in (lambda: ds.write_parquet(str(tmp_path / "pq")),
                     lambda: ray.data.read_parquet(str(tmp_path)),
                     lambda: ray.data.from_arrow([])):
            with pytest.raises(ImportError, match="pip install pyarrow"):
                call()
        return
    ds.write_parquet(str(tmp_path / "pq"))
    pd.testing.assert_frame_equal(ray.data.read_parquet(str(tmp_path / "pq")).to_pandas(), frame)
    only_k = ray.data.read_parquet(str(tmp_path / "pq"), columns=["k"])
    assert only_k.columns() == ["k"] and only_k.sum("k") == frame.k.sum()
