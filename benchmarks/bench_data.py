"""ray.data benchmarks on a 2-CPU cluster; prints one JSON object.

    python benchmarks/bench_data.py             # 2M rows, about 30 s on a quiet 2-core box
    python benchmarks/bench_data.py --rows 200000
    /work/peer/ray260/bin/python benchmarks/bench_data.py    # the same against Ray 2.60

Public API only, so it runs unchanged against any implementation of ``ray.data``.
Each figure is the best of ``--repeat`` runs. Ratios compare the same work done by
plain numpy/pandas in the driver (``*_vs_local``: local seconds / ray.data seconds, so
above 1 means ray.data was faster). ``tiny_op_ms`` is the fixed cost of one
transformation over 8 one-row blocks. ``sort`` and ``groupby`` run as tasks over 8
blocks of the same 2-column data (an int key in [0, 1000), a float) against pandas
``sort_values``/``groupby`` in one process: ``*_pandas_blocks`` from
``from_pandas``, ``*_arrow_blocks`` from ``from_arrow``. ``fused_maps_s`` runs
``map_batches -> map_batches -> filter`` over the 8 blocks.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import pandas as pd
import pyarrow as pa


def best_of(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def _sort_and_groupby(out: dict, name: str, keyed, frame: pd.DataFrame, repeat: int) -> None:
    rows = len(frame)
    keyed.sort("x").materialize()  # warm: workers import what the kernels use
    sort_s = best_of(repeat, lambda: keyed.sort("x").materialize())
    out[f"sort_{name}_rows_per_s"] = rows / sort_s
    out[f"sort_{name}_vs_local"] = best_of(repeat, lambda: frame.sort_values("x")) / sort_s
    keyed.groupby("k").mean("x").materialize()
    groupby_s = best_of(repeat, lambda: keyed.groupby("k").mean("x").materialize())
    out[f"groupby_mean_1000_keys_{name}_s"] = groupby_s
    out[f"groupby_{name}_vs_local"] = best_of(repeat, lambda: frame.groupby("k")["x"].mean()) / groupby_s


def run(rows: int, repeat: int) -> dict:
    import ray

    base = ray.data.range(rows, override_num_blocks=8).materialize()
    frame = pd.DataFrame({"id": np.arange(rows), "x": np.random.default_rng(0).random(rows)})
    out: dict = {"rows": rows, "blocks": 8}

    out["range_count_s"] = best_of(repeat, lambda: ray.data.range(rows, override_num_blocks=8).count())
    batches_s = best_of(repeat, lambda: base.map_batches(lambda b: {"id": b["id"] * 2}).materialize())
    local_s = best_of(repeat, lambda: np.arange(rows) * 2)
    out["map_batches_rows_per_s"] = rows / batches_s
    out["map_batches_vs_local"] = local_s / batches_s
    out["fused_maps_s"] = best_of(repeat, lambda: base.map_batches(lambda b: {"id": b["id"] * 2})
                                  .map_batches(lambda b: {"id": b["id"] + 1})
                                  .filter(lambda r: r["id"] % 2 == 1).materialize())
    small = ray.data.range(min(rows, 100_000), override_num_blocks=8).materialize()
    out["map_rows_per_s"] = small.count() / best_of(
        repeat, lambda: small.map(lambda r: {"id": r["id"] + 1}).materialize()
    )
    out["sum_s"] = best_of(repeat, lambda: base.sum("id"))
    out["repartition_4_s"] = best_of(repeat, lambda: base.repartition(4).materialize())
    out["repartition_shuffle_4_s"] = best_of(repeat, lambda: base.repartition(4, shuffle=True).materialize())
    out["iter_batches_rows_per_s"] = rows / best_of(
        repeat, lambda: sum(len(b["id"]) for b in base.iter_batches(batch_size=4096))
    )
    roundtrip_s = best_of(repeat, lambda: ray.data.from_pandas(frame).to_pandas())
    out["from_to_pandas_vs_copy"] = best_of(repeat, frame.copy) / roundtrip_s

    keyed_frame = pd.DataFrame({"k": np.random.default_rng(1).integers(0, 1000, rows), "x": frame["x"]})
    # 8 blocks cut here (Ray 2.60's from_pandas(override_num_blocks=) fails on pandas 3).
    cuts = [(rows * i // 8, rows * (i + 1) // 8) for i in range(8)]
    from_pandas = ray.data.from_pandas([keyed_frame.iloc[a:b] for a, b in cuts]).materialize()
    _sort_and_groupby(out, "pandas_blocks", from_pandas, keyed_frame, repeat)
    table = pa.Table.from_pandas(keyed_frame, preserve_index=False)
    from_arrow = ray.data.from_arrow([table.slice(a, b - a) for a, b in cuts]).materialize()
    _sort_and_groupby(out, "arrow_blocks", from_arrow, keyed_frame, repeat)

    tiny = ray.data.range(8, override_num_blocks=8).materialize()
    out["tiny_op_ms"] = 1000 * best_of(repeat, lambda: tiny.map_batches(lambda b: b).materialize())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import ray

    ray.init(num_cpus=2)
    try:
        result = run(args.rows, args.repeat)
    finally:
        ray.shutdown()
    result["ray_version"] = ray.__version__
    result["load_avg_1m"] = os.getloadavg()[0]
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in result.items()}))


if __name__ == "__main__":
    main()
