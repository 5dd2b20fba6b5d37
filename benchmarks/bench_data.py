"""ray.data benchmarks on a 2-CPU cluster; prints one JSON object.

    python benchmarks/bench_data.py             # 2M rows, about 30 s on a quiet 2-core box
    python benchmarks/bench_data.py --rows 200000

Each figure is the best of ``--repeat`` runs. Ratios compare the same work done by
plain numpy/pandas in the driver (``*_vs_local``: local seconds / ray.data seconds, so
above 1 means ray.data was faster). ``tiny_op_ms`` is the fixed cost of one
transformation over 8 one-row blocks (8 tasks plus their metadata). ``sort`` and
``groupby`` run as tasks over 8 blocks against pandas ``sort_values``/``groupby`` in
one process.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import pandas as pd


def best_of(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


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
    keyed = ray.data.from_pandas(keyed_frame, override_num_blocks=8).materialize()
    sort_s = best_of(repeat, lambda: keyed.sort("x").materialize())
    out["sort_rows_per_s"] = rows / sort_s
    out["sort_vs_local"] = best_of(repeat, lambda: keyed_frame.sort_values("x")) / sort_s
    groupby_s = best_of(repeat, lambda: keyed.groupby("k").mean("x").materialize())
    out["groupby_mean_1000_keys_s"] = groupby_s
    out["groupby_vs_local"] = best_of(repeat, lambda: keyed_frame.groupby("k")["x"].mean()) / groupby_s
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
    result["load_avg_1m"] = os.getloadavg()[0]
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in result.items()}))


if __name__ == "__main__":
    main()
