"""ray.data and the object store: Arrow blocks are read without copies, and streaming
pipelines over several times the store's size finish without spilling. Each test
starts its own cluster with the store size it needs."""

from __future__ import annotations

import sys

import cloudpickle
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import ray

MIB = 1024**2

# The helpers below run in tasks: ship them by value (workers cannot import this file).
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _shared_memory_maps() -> list[tuple[int, int]]:
    """(start, end) of this process's mappings of files under /dev/shm."""
    spans = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split()
            if len(parts) > 5 and parts[5].startswith("/dev/shm/"):
                start, end = (int(x, 16) for x in parts[0].split("-"))
                spans.append((start, end))
    return spans


def _rss_anon_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no RssAnon in /proc/self/status")


def _read_in_place(table: pa.Table) -> dict:
    """Where ``table``'s buffers lie, and what reading every value cost in private memory."""
    spans = _shared_memory_maps()
    buffers = [b for column in table.columns for chunk in column.chunks for b in chunk.buffers() if b is not None]
    before = _rss_anon_bytes()
    total = pc.sum(table.column("x")).as_py()  # touches every page of the column
    return {
        "bytes": sum(b.size for b in buffers),
        "in_shared_memory": all(any(lo <= b.address and b.address + b.size <= hi for lo, hi in spans)
                                for b in buffers),
        "rss_growth": _rss_anon_bytes() - before,
        "total": total,
    }


def test_a_1gb_arrow_table_read_by_a_task_is_not_copied(ray_start):
    ray_start(num_cpus=1, object_store_memory=1300 * MIB)
    rows = 128 * MIB  # int64: 1 GiB
    ds = ray.data.from_arrow(pa.table({"x": np.arange(rows, dtype=np.int64)}))
    (ref,) = ds.to_arrow_refs()

    @ray.remote
    def read(table):
        return _read_in_place(table)

    seen = ray.get(read.remote(ref))
    assert seen["bytes"] >= 1024 * MIB and seen["in_shared_memory"], seen
    assert seen["rss_growth"] < 64 * MIB, seen  # reading 1 GiB copied none of it
    assert seen["total"] == rows * (rows - 1) // 2

    def check(batch: pa.Table) -> dict:
        found = _read_in_place(batch)
        return {"in_shared_memory": [found["in_shared_memory"]], "rss_growth": [found["rss_growth"]]}

    through_map = ds.map_batches(check, batch_format="pyarrow").take_all()
    assert through_map[0]["in_shared_memory"] and through_map[0]["rss_growth"] < 64 * MIB, through_map


STORE = 128 * MIB
ROW_BYTES = 8 * 128  # a 128-float64 vector per row


def _big_pipeline(rows: int, blocks: int):
    def payload(batch):
        ids = batch["id"]
        return {"id": ids, "vec": np.broadcast_to(ids[:, None].astype(np.float64), (len(ids), 128)).copy()}

    return ray.data.range(rows, override_num_blocks=blocks).map_batches(payload)


def test_a_pipeline_over_four_times_the_store_streams_through_it(ray_start, tmp_path):
    ray_start(num_cpus=2, object_store_memory=STORE)
    rows = 5 * STORE // ROW_BYTES  # 5x the store, in ~2.5 MiB blocks
    ds = _big_pipeline(rows, 256).map_batches(lambda b: {"id": b["id"], "vec": b["vec"] * 2})
    seen, checksum = 0, 0.0
    for batch in ds.iter_batches(batch_size=10_000):
        seen += len(batch["id"])
        checksum += float(batch["vec"][:, 0].sum())
    assert seen == rows and checksum == 2.0 * rows * (rows - 1) / 2
    produced = sum(int(line.split(", ")[-1].split()[0]) for line in ds.stats().splitlines()
                   if line.startswith("* Output size bytes per block"))
    assert produced > 4 * STORE  # the blocks that went through the store add up to more than 4x its size

    _big_pipeline(rows, 256).write_parquet(str(tmp_path / "out"))
    files = list((tmp_path / "out").iterdir())
    assert len(files) == 256
    assert ray.data.read_parquet(str(tmp_path / "out"), columns=["id"]).sum("id") == rows * (rows - 1) // 2


def test_an_object_store_budget_below_one_block_still_makes_progress(ray_start):
    ray_start(num_cpus=2, object_store_memory=STORE)
    context = ray.data.DataContext.get_current()
    limits = context.execution_options.resource_limits
    limits.object_store_memory = 1
    try:
        assert _big_pipeline(20_000, 8).count() == 20_000  # one task at a time, never stuck
    finally:
        limits.object_store_memory = None
    with pytest.raises(ValueError, match="object_store_memory must be a positive number"):
        ray.data.ExecutionResources(object_store_memory=-1)
