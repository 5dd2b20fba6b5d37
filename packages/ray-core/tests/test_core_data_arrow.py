"""ray.data on Arrow: block formats, plans (fusion, pushdown), the Arrow sort and
groupby kernels, expressions, Parquet, stats and progress. Pure pieces first, then
on one module-scoped 2-CPU cluster; results checked against pandas or plain Python."""

from __future__ import annotations

import pickle
import time

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ray
from ray.data import _arrow_groupby, _blocks, _plan, _sort
from ray.data._io import ParquetDatasource
from ray.data._stats import DatasetStats, OperatorStats
from ray.data._transforms import FilterRows, MapBatches
from ray.data.aggregate import Count, Max, Mean, Min, Std, Sum
from ray.data.expressions import col, lit, parse, to_pyarrow_expression

# -- blocks ------------------------------------------------------------------------------


def test_new_blocks_are_arrow_and_mixed_columns_fall_back_to_pandas():
    block = _blocks.build_block([{"a": 1, "s": "x"}, {"a": 2, "s": None}])
    assert isinstance(block, pa.Table) and block.schema.types == [pa.int64(), pa.string()]
    assert _blocks.metadata_of(block).block_format == "arrow"
    mixed = _blocks.build_block([{"v": 1}, {"v": "one"}])
    assert isinstance(mixed, pd.DataFrame) and mixed["v"].tolist() == [1, "one"]
    joined = _blocks.concat_blocks([block, _blocks.build_block([{"a": 3.5, "s": "y"}])])
    assert isinstance(joined, pa.Table) and joined.column("a").to_pylist() == [1.0, 2.0, 3.5]
    with_frame = _blocks.concat_blocks([block, pd.DataFrame({"a": [9], "s": ["z"]})])
    assert isinstance(with_frame, pa.Table) and with_frame.num_rows == 3


def test_tensor_columns_are_fixed_shape_tensors_seen_as_ndarrays():
    tensors = np.arange(24, dtype=np.float32).reshape(6, 2, 2)
    block = _blocks.block_from_batch({"t": tensors, "i": np.arange(6)})
    assert isinstance(block.column("t").type, pa.FixedShapeTensorType)
    np.testing.assert_array_equal(_blocks.to_numpy_dict(block)["t"], tensors)
    rows = list(_blocks.iter_rows(block))
    assert rows[1]["i"] == 1 and np.array_equal(rows[1]["t"], tensors[1])
    frame = _blocks.to_pandas_block(block)
    assert frame.columns.tolist() == ["t", "i"] and np.array_equal(frame["t"][5], tensors[5])
    back = _blocks.accessor(frame).to_arrow()
    assert back.schema == block.schema
    ragged = _blocks.block_from_batch({"r": np.array([np.zeros(2), np.zeros(3)], dtype=object)})
    assert isinstance(ragged, pd.DataFrame)  # Arrow has no ragged tensors here: pandas holds them


def test_a_slice_is_compacted_before_it_is_stored():
    table = pa.table({"x": np.arange(1_000_000), "s": pa.array([f"v{i % 10}" for i in range(1_000_000)])})
    piece = table.slice(500_000, 1000)
    buffers = []
    pickle.dumps(piece, protocol=5, buffer_callback=buffers.append)
    assert sum(b.raw().nbytes for b in buffers) > 8_000_000  # a plain slice drags its parent along
    stored = _blocks.for_storage(piece)
    buffers = []
    pickle.dumps(stored, protocol=5, buffer_callback=buffers.append)
    assert sum(b.raw().nbytes for b in buffers) < 100_000 and stored.equals(piece)
    assert _blocks.for_storage(table) is table  # a whole table is stored as it is


def test_batch_formats_of_an_arrow_block():
    block = pa.table({"a": [1, 2, 3], "f": [0.5, None, 2.0]})
    assert _blocks.to_batch(block, "pyarrow") is block
    numpy_batch = _blocks.to_batch(block, "default")
    assert numpy_batch["a"].tolist() == [1, 2, 3] and np.isnan(numpy_batch["f"][1])
    frame = _blocks.to_batch(block, "pandas")
    assert isinstance(frame, pd.DataFrame) and frame["a"].tolist() == [1, 2, 3]
    out = MapBatches(fn=lambda t: t.append_column("b", pc.multiply(t["a"], 2)), batch_format="pyarrow")(block)
    assert out.column("b").to_pylist() == [2, 4, 6]
    kept = FilterRows(fn=lambda row: row["a"] != 2)(block)
    assert isinstance(kept, pa.Table) and kept.column("a").to_pylist() == [1, 3]


# -- plans -------------------------------------------------------------------------------


class _Source(_plan.Datasource):
    name = "ReadThing"

    def read_tasks(self):
        return []


def _map_op(child, label, **fields):
    return _plan.MapOperator(child, lambda b: b, label, **fields)


def test_consecutive_task_maps_fuse_into_the_read():
    read = _plan.Read(_Source())
    chain = _map_op(_map_op(_map_op(read, "MapBatches(f)"), "MapBatches(g)"), "Filter(h)")
    fused = _plan.optimize(chain)
    assert isinstance(fused, _plan.Read) and len(fused.transforms) == 3
    assert fused.name == "ReadThing->MapBatches(f)->MapBatches(g)->Filter(h)"
    other_options = _map_op(read, "MapBatches(gpu)", ray_remote_args={"num_gpus": 1})
    assert isinstance(_plan.optimize(other_options), _plan.MapOperator)  # different resources: not fused
    actor = _plan.MapOperator(read, lambda b: b, "MapBatches(Model)", concurrency=2, fn_class=object)
    assert isinstance(_plan.optimize(_map_op(actor, "Map(f)")).input_op, _plan.MapOperator)
    source = _plan.InputData((), ())
    maps = _plan.optimize(_map_op(_map_op(source, "Map(a)"), "Map(b)"))
    assert isinstance(maps, _plan.MapOperator) and maps.name == "Map(a)->Map(b)" and maps.input_op is source


def test_select_and_filter_expressions_push_into_a_parquet_read():
    read = _plan.Read(ParquetDatasource(("f.parquet",), "parquet", {}))
    expression = pc.field("x") > 3
    plan = _map_op(_map_op(read, "Filter(x > 3)", pushdown_filter=expression), "Project",
                   pushdown_columns=("x",))
    pushed = _plan.optimize(plan)
    assert isinstance(pushed, _plan.Read) and not pushed.transforms
    assert pushed.datasource.options["columns"] == ["x"]
    assert pushed.datasource.options["filter"].equals(expression)
    plain = _plan.Read(_Source())
    assert _plan.optimize(_map_op(plain, "Project", pushdown_columns=("x",))).transforms  # no pushdown: a map


# -- expressions -------------------------------------------------------------------------


def test_expressions_and_strings_become_arrow_filters():
    table = pa.table({"x": [1, 5, 10, None], "s": ["a", "b", "c", "a"]})

    def rows(expr):
        return table.filter(to_pyarrow_expression(expr)).column("x").to_pylist()

    assert rows((col("x") > 2) & (col("x") < 10)) == [5]
    assert rows(col("s").is_in(["a", "c"])) == [1, 10, None]
    assert rows("x > 2 and s != 'c'") == [5]
    assert rows("x is None") == [None]
    assert rows(~(col("x") >= 5)) == [1]
    assert rows("s not in ['a']") == [5, 10]
    assert repr(parse("x + 1 > 2")) == "((col('x') + lit(1)) > lit(2))"
    assert rows(col("x") % 3 == lit(1)) == [1, 10]
    with pytest.raises(ValueError, match="cannot parse"):
        parse("x >")
    with pytest.raises(ValueError, match="not supported"):
        parse("f(x)")
    with pytest.raises(TypeError, match="no truth value"):
        bool(col("x") > 1)


# -- sort and groupby kernels ------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    parts=st.lists(st.lists(st.integers(-5, 5), max_size=30), min_size=1, max_size=4),
    descending=st.booleans(),
    num_parts=st.integers(1, 4),
    fmt=st.sampled_from(["arrow", "pandas", "float"]),
)
def test_group_by_partition_then_merge_is_a_stable_sort(parts, descending, num_parts, fmt):
    key = _sort.SortKey.of("k", descending)

    def block(values, start):
        ks = np.array(values, dtype=np.float64 if fmt == "float" else np.int64)
        columns = {"k": ks, "row": np.arange(start, start + len(values))}
        return pd.DataFrame(columns) if fmt == "pandas" else pa.table(columns)

    starts = np.cumsum([0, *map(len, parts)])
    blocks = [block(v, s) for v, s in zip(parts, starts)]
    samples = [s for b in blocks for s in _sort.sample_keys(b, key, 5, [0])]
    boundaries = _sort.choose_boundaries(samples, key, num_parts) if samples else []
    grouped = [_sort.group_by_partition(b, key, boundaries) for b in blocks]
    out = [_sort.merge_partition([g for g, _ in grouped], [o for _, o in grouped], key, k)
           for k in range(len(boundaries) + 1)]
    rows = [r for part in out for r in _blocks.iter_rows(part)]
    everything = [(k, i) for i, k in enumerate(v for values in parts for v in values)]
    expected = sorted(everything, key=lambda t: (-t[0] if descending else t[0], t[1]))
    assert [(r["k"], r["row"]) for r in rows] == [(float(k) if fmt == "float" else k, i) for k, i in expected]


def test_fast_sort_is_stable_for_ties_and_keeps_nulls_last():
    keys = np.array([3.0, 1.0, 3.0, 2.0, 1.0])
    block = pa.table({"k": keys, "i": np.arange(5)})
    assert _sort.sort_block(block, _sort.SortKey.of("k")).column("i").to_pylist() == [1, 4, 3, 0, 2]
    assert _sort.sort_block(block, _sort.SortKey.of("k", True)).column("i").to_pylist() == [0, 2, 3, 1, 4]
    ints = pa.table({"k": [5, -2**62, 5, 7], "i": [0, 1, 2, 3]})  # a wide range: no composite key
    assert _sort.sort_block(ints, _sort.SortKey.of("k", True)).column("i").to_pylist() == [3, 0, 2, 1]
    with_nulls = pa.table({"k": [2.0, None, float("nan"), 1.0]})
    assert _sort.sort_block(with_nulls, _sort.SortKey.of("k")).column("k").to_pylist()[:2] == [1.0, 2.0]
    text = pa.table({"s": ["b", None, "a", "c"]})
    assert _sort.sort_block(text, _sort.SortKey.of("s", True)).column("s").to_pylist() == ["c", "b", "a", None]


def _frame_with_nulls(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "k": rng.integers(0, 7, n).astype(float),
        "v": rng.normal(size=n),
        "i": rng.integers(-50, 50, n),
        "s": rng.choice(["ant", "bee", "cat"], n),
    })
    frame.loc[rng.choice(n, n // 10, replace=False), "v"] = np.nan
    frame.loc[rng.choice(n, 3, replace=False), "k"] = np.nan
    return frame


def test_arrow_partials_and_combine_match_pandas():
    frame = _frame_with_nulls(500, 1)
    aggs = (Count(), Count("v", ignore_nulls=True), Sum("v"), Mean("v"), Min("v"), Max("i"), Std("v"),
            Std("i", ddof=0), Min("s"), Max("s"), Sum("v", ignore_nulls=False, alias_name="strict"))
    schema = _blocks.schema_of(pa.Table.from_pandas(frame, preserve_index=False))
    assert _arrow_groupby.supports(aggs, schema)
    key = _sort.SortKey.of("k")
    partials = [_arrow_groupby.partial(frame.iloc[a:b], ("k",), aggs) for a, b in [(0, 100), (100, 333), (333, 500)]]
    got = _arrow_groupby.combine(_sort.partition_of(partials, key, [], 0), ("k",), aggs).to_pandas()
    grouped = frame.groupby("k", dropna=False)
    assert got["k"].tolist()[:-1] == sorted(frame["k"].dropna().unique()) and np.isnan(got["k"].iloc[-1])
    assert got["count()"].tolist() == grouped.size().tolist()
    assert got["count(v)"].tolist() == grouped["v"].count().tolist()
    np.testing.assert_allclose(got["sum(v)"], grouped["v"].sum())
    np.testing.assert_allclose(got["mean(v)"], grouped["v"].mean())
    np.testing.assert_allclose(got["min(v)"], grouped["v"].min())
    assert got["max(i)"].tolist() == grouped["i"].max().tolist()
    np.testing.assert_allclose(got["std(v)"], grouped["v"].std())
    np.testing.assert_allclose(got["std(i)"], grouped["i"].std(ddof=0))
    assert got["min(s)"].tolist() == grouped["s"].min().tolist()
    assert got["max(s)"].tolist() == grouped["s"].max().tolist()
    assert got["strict"].isna().tolist() == grouped["v"].apply(lambda v: v.isna().any()).tolist()
    assert not _arrow_groupby.supports((Sum("s"),), schema)  # sums need numbers: the generic path says so


def test_stats_read_like_rays():
    meta = _blocks.metadata_of(pa.table({"a": [1, 2]}), exec_stats=_blocks.BlockExecStats(0.002, 0.001, "n1", "t1", 0.0))
    op = OperatorStats("ReadRange->MapBatches(f)", [meta, meta], num_tasks=2, wall_time_s=0.5)
    text = DatasetStats([op], wall_time_s=0.5).to_string()
    assert text.startswith("Operator 0 ReadRange->MapBatches(f): 2 tasks executed, 2 blocks produced in 0.50s")
    assert "* Remote wall time: 2.00ms min, 2.00ms max, 2.00ms mean, 4.00ms total" in text
    assert "* Output num rows per block: 2 min, 2 max, 2 mean, 4 total" in text
    assert "1 nodes used" in text and "Dataset throughput" in text


# -- on a cluster ------------------------------------------------------------------------


def test_three_fused_operators_run_as_one_task_per_block(ray_module):
    def tag(batch):
        return {**batch, "task": np.full(len(batch["id"]), ray.get_runtime_context().get_task_id())}

    def same_task(batch):
        assert set(batch["task"]) == {ray.get_runtime_context().get_task_id()}
        return batch

    ds = (ray.data.range(400, override_num_blocks=4)
          .map_batches(tag)
          .map_batches(same_task)
          .filter(lambda row: row["task"] == ray.get_runtime_context().get_task_id()))
    out = ds.materialize()
    assert out.count() == 400  # every row passed the filter: it ran in the task that tagged it
    assert len({row["task"] for row in out.iter_rows()}) == 4 == out.num_blocks()
    assert "Operator 0 ReadRange->MapBatches(tag)->MapBatches(same_task)->Filter(<lambda>): 4 tasks executed, " \
           "4 blocks produced" in out.stats()
    assert repr(ds).splitlines() == ["Filter(<lambda>)", "+- MapBatches(same_task)", "   +- MapBatches(tag)",
                                     "      +- Dataset(num_rows=400, schema={id: int64})"]


def test_execution_callbacks_see_every_operator(ray_module):
    seen = []

    class Recorder(ray.data.ExecutionCallback):
        def on_execution_start(self, operators):
            seen.append(("start", tuple(operators)))

        def on_operator_progress(self, progress):
            seen.append(("progress", progress.name, progress.finished_blocks, progress.total_blocks))

        def on_execution_end(self, stats, completed):
            seen.append(("end", completed, len(stats.operators)))

    context = ray.data.DataContext.get_current()
    context.execution_callbacks.append(Recorder())
    try:
        ray.data.range(30, override_num_blocks=3).map(lambda r: r).sort("id").take_all()
    finally:
        context.execution_callbacks.clear()
    assert seen[0] == ("start", ("ReadRange->Map(<lambda>)", "Sort"))
    assert ("progress", "ReadRange->Map(<lambda>)", 3, 3) in seen
    assert seen[-1] == ("end", True, 2)
    with pytest.raises(AttributeError, match="no setting 'max_blocks'"):
        context.max_blocks = 3


def test_progress_bars_are_drawn_per_operator_unless_turned_off(ray_module, capfd, monkeypatch):
    from ray.data._progress import ProgressBars
    from ray.experimental import progress_bar

    monkeypatch.setattr(progress_bar, "_enabled_override", True)  # pytest's stderr is no tty
    drawn = []

    class Keep(ProgressBars):  # the default bars, kept for inspection
        def on_execution_end(self, stats, completed):
            drawn.extend((bar.name, bar.completed, bar.total) for bar in self.bars)
            super().on_execution_end(stats, completed)

    context = ray.data.DataContext.get_current()
    context.execution_callbacks.append(Keep())
    try:
        ray.data.range(40, override_num_blocks=4).map(lambda r: r).sort("id").take_all()
    finally:
        context.execution_callbacks.clear()
    assert drawn == [("ReadRange->Map(<lambda>)", 4, 4), ("Sort", 4, 4)], drawn
    err = capfd.readouterr().err
    assert "ReadRange->Map(<lambda>)" in err and "Sort" in err and "blocks" in err, err
    context.enable_progress_bars = False
    try:
        ray.data.range(40, override_num_blocks=4).map(lambda r: r).take_all()
        assert "ReadRange->Map" not in capfd.readouterr().err
    finally:
        context.enable_progress_bars = True
    with pytest.raises(TypeError, match="enable_progress_bars"):
        context.enable_progress_bars = "yes"


def test_arrow_refs_round_trip_without_copies(ray_module):
    tables = [pa.table({"x": np.arange(i, i + 5), "s": list("abcde")}) for i in (0, 5)]
    refs = [ray.put(t) for t in tables]
    ds = ray.data.from_arrow_refs(refs)
    assert ds.to_arrow_refs() == refs and ds.count() == 10
    assert ray.data.from_arrow(tables).take(2) == [{"x": 0, "s": "a"}, {"x": 1, "s": "b"}]
    frames = ray.data.from_pandas(pd.DataFrame({"x": [1, 2]}))
    assert ray.get(frames.to_arrow_refs())[0].equals(pa.table({"x": [1, 2]}))
    mapped = ray.data.from_arrow(tables[0]).map_batches(lambda t: t.slice(1, 2), batch_format="pyarrow")
    assert ray.get(mapped.to_arrow_refs())[0].column("x").to_pylist() == [1, 2]
    batches = list(ray.data.range(10, override_num_blocks=2).iter_batches(batch_size=4, batch_format="pyarrow"))
    assert [b.num_rows for b in batches] == [4, 4, 2] and all(isinstance(b, pa.Table) for b in batches)
    with pytest.raises(TypeError, match="ObjectRef"):
        ray.data.from_arrow_refs(tables[0])


def test_pandas_blocks_stay_pandas_and_mix_with_arrow(ray_module):
    frame = pd.DataFrame({"a": [1, 2, 3]})
    ds = ray.data.from_pandas(frame).map_batches(lambda df: df.assign(b=df.a * 2), batch_format="pandas")
    assert [b.metadata.block_format for b in ds.iter_internal_ref_bundles()] == ["pandas"]
    both = ds.union(ray.data.from_items([{"a": 4, "b": 8}]))
    assert both.take_all() == [{"a": 1, "b": 2}, {"a": 2, "b": 4}, {"a": 3, "b": 6}, {"a": 4, "b": 8}]
    assert both.sort("a", descending=True).take(1) == [{"a": 4, "b": 8}]


def test_sort_and_groupby_on_arrow_blocks_match_pandas(ray_module):
    frame = _frame_with_nulls(3000, 2)
    ds = ray.data.from_arrow([pa.Table.from_pandas(frame.iloc[a:a + 600], preserve_index=False)
                              for a in range(0, 3000, 600)])
    got = ds.sort("v", descending=True).to_pandas()
    expected = frame.sort_values("v", ascending=False, na_position="last", kind="stable").reset_index(drop=True)
    pd.testing.assert_series_equal(got["v"], expected["v"])
    assert got["i"].tolist()[:2000] == expected["i"].tolist()[:2000]
    two_keys = ds.sort(["s", "i"], descending=[False, True]).to_pandas()
    expected = frame.sort_values(["s", "i"], ascending=[True, False], kind="stable").reset_index(drop=True)
    assert two_keys[["s", "i"]].values.tolist() == expected[["s", "i"]].values.tolist()
    grouped = ds.groupby("s", num_partitions=2).aggregate(Count(), Mean("v"), Std("i")).to_pandas()
    reference = frame.groupby("s")
    assert grouped["s"].tolist() == ["ant", "bee", "cat"] and grouped["count()"].tolist() == reference.size().tolist()
    np.testing.assert_allclose(grouped["mean(v)"], reference["v"].mean())
    np.testing.assert_allclose(grouped["std(i)"], reference["i"].std())
    blocks = [b for b in ds.groupby("k", num_partitions=3).count().iter_internal_ref_bundles() if b.metadata.num_rows]
    assert len(blocks) >= 2
    by_int = ray.data.range(10_000, override_num_blocks=4).map_batches(lambda b: {"g": b["id"] % 100, "id": b["id"]})
    sums = by_int.groupby("g").sum("id").take_all()
    assert [r["g"] for r in sums] == list(range(100)) and sums[3]["sum(id)"] == sum(range(3, 10_000, 100))


def test_filter_expressions_and_parquet_pushdown(ray_module, tmp_path):
    frame = pd.DataFrame({"x": np.arange(100), "y": np.arange(100) * 0.5, "s": [f"r{i % 4}" for i in range(100)]})
    ray.data.from_pandas(frame, override_num_blocks=4).write_parquet(str(tmp_path / "pq"))
    files = sorted(p.name for p in (tmp_path / "pq").iterdir())
    assert len(files) == 4 and pq.read_table(tmp_path / "pq" / files[1]).column("x").to_pylist()[0] == 25
    ds = ray.data.read_parquet(str(tmp_path / "pq"))
    selected = ds.filter(expr="x >= 90").select_columns(["x"])
    assert selected.take_all() == [{"x": i} for i in range(90, 100)]
    stats = selected.stats()
    assert "ReadParquet:" in stats and "Project" not in stats and "Filter" not in stats  # both went into the read
    assert ray.data.read_parquet(str(tmp_path / "pq"), columns=["s"], filter=col("x") < 3).take_all() == [
        {"s": "r0"}, {"s": "r1"}, {"s": "r2"}]
    assert ds.filter(expr=pc.field("s") == "r1").count() == 25
    assert ds.map_batches(lambda b: b).filter(expr=(col("y") > 49) | (col("x") == 0)).count() == 2
    with pytest.raises(ValueError, match="exactly one"):
        ds.filter()


def test_datasets_of_tensors_and_sizes(ray_module):
    tensors = np.arange(48, dtype=np.float64).reshape(12, 2, 2)
    ds = ray.data.from_numpy(tensors)
    assert ds.count() == 12 and ds.schema().names == ("data",)
    doubled = ds.map_batches(lambda b: {"data": b["data"] * 2})
    np.testing.assert_array_equal(np.concatenate([b["data"] for b in doubled.iter_batches(batch_size=5)]), tensors * 2)
    assert ds.size_bytes() >= tensors.nbytes
    assert "data: numpy.ndarray(shape=(2, 2), dtype=float64)" in repr(ds)


def test_iteration_errors_and_early_stops_end_the_prefetch_thread(ray_module):
    import threading

    def boom(batch):
        if batch["id"][0] >= 50:
            raise KeyError("no such thing")
        return batch

    ds = ray.data.range(100, override_num_blocks=4).map_batches(boom)
    with pytest.raises(KeyError, match="no such thing"):
        for _ in ds.iter_batches(batch_size=10):
            pass
    stream = ray.data.range(1000, override_num_blocks=10).iter_batches(batch_size=5)
    assert len(next(stream)["id"]) == 5
    stream.close()
    assert not [t for t in threading.enumerate() if t.name == "ray.data prefetch"]

    def slow_after_first(batch):
        if batch["id"][0] > 0:
            time.sleep(4)
        return batch

    stream = ray.data.range(40, override_num_blocks=4).map_batches(slow_after_first).iter_batches(batch_size=5)
    assert len(next(stream)["id"]) == 5
    start = time.perf_counter()
    stream.close()  # the helper thread is waiting for slow tasks: it is cancelled, not waited for
    assert time.perf_counter() - start < 2.5
    assert not [t for t in threading.enumerate() if t.name == "ray.data prefetch"]
    with pytest.raises(ValueError, match="Did you mean 'id'"):
        ray.data.range(10).map_batches(lambda b: b).sum("idd")  # columns unknown until it runs


def test_writes_take_task_options(ray_module, tmp_path):
    ray.data.range(20, override_num_blocks=2).write_parquet(str(tmp_path / "w"), ray_remote_args={"num_cpus": 0.5})
    assert ray.data.read_parquet(str(tmp_path / "w")).count() == 20
    with pytest.raises(ValueError, match="num_cpus"):
        ray.data.range(2).write_parquet(str(tmp_path / "x"), ray_remote_args={"num_cpus": -1})


def test_iter_torch_batches(ray_module):
    torch = pytest.importorskip("torch")
    ds = ray.data.range(10, override_num_blocks=2).map_batches(lambda b: {"x": b["id"] * 0.5, "y": b["id"]})
    batches = list(ds.iter_torch_batches(batch_size=4, dtypes={"x": torch.float32}, device="cpu"))
    assert [b["x"].dtype for b in batches] == [torch.float32] * 3 and batches[0]["y"].dtype == torch.int64
    assert torch.equal(torch.cat([b["y"] for b in batches]), torch.arange(10))
    first = next(ds.iter_torch_batches(batch_size=4))  # "auto": the GPU where torch sees one
    assert first["y"].device.type == ("cuda" if torch.cuda.is_available() else "cpu")
    sizes = list(ds.iter_torch_batches(batch_size=4, collate_fn=lambda b: len(b["x"]), drop_last=True))
    assert sizes == [4, 4]
