"""The dashboard's metrics, computed from task records and node samples (pure functions).

* ``completion_histogram``: how long tasks ran (start to end), in logarithmic bins,
  the 0.2 UI's completion-time histogram (FEATURES UI-006).
* ``heat_map``: for each node and time bin, how many tasks ran there on average
  (task-seconds in the bin / bin width): the cluster-usage heat map (UI-008).
* ``series``: per-node utilisation over time from ``node_stats`` samples: busy CPUs,
  host CPU %, memory and object store (UI-007).
"""

from __future__ import annotations

import math

MAX_HEAT_BINS = 60


def completion_histogram(durations_s: list[float], bins: int = 20) -> dict:
    """Counts of ``durations_s`` in ``bins`` log-spaced bins (edges in seconds)."""
    values = [d for d in durations_s if d is not None and d >= 0]
    if not values:
        return {"edges_s": [], "counts": [], "total": 0}
    low = max(min(values), 1e-6)
    high = max(max(values), low * 1.0001)
    lo, hi = math.log10(low), math.log10(high)
    width = (hi - lo) / bins
    edges = [10 ** (lo + i * width) for i in range(bins + 1)]
    counts = [0] * bins
    for value in values:
        if value <= low:
            index = 0
        else:
            index = min(bins - 1, int((math.log10(value) - lo) / width))
        counts[index] += 1
    return {"edges_s": edges, "counts": counts, "total": len(values)}


def heat_map(intervals: list[tuple[str, float, float]], *, start: float | None = None,
             end: float | None = None, bins: int = MAX_HEAT_BINS) -> dict:
    """``intervals``: (row, t_start, t_end) per task. Average concurrent tasks per row
    and time bin over [start, end] (default: the intervals' span)."""
    if not intervals:
        return {"rows": [], "t0": start, "bin_s": 0.0, "values": []}
    t0 = min(i[1] for i in intervals) if start is None else start
    t1 = max(i[2] for i in intervals) if end is None else end
    t1 = max(t1, t0 + 1e-3)
    bin_s = (t1 - t0) / bins
    rows = sorted({i[0] for i in intervals})
    index = {row: n for n, row in enumerate(rows)}
    values = [[0.0] * bins for _ in rows]
    for row, a, b in intervals:
        a, b = max(a, t0), min(b, t1)
        if b <= a:
            continue
        first, last = int((a - t0) / bin_s), min(bins - 1, int((b - t0) / bin_s))
        line = values[index[row]]
        for k in range(first, last + 1):
            lo, hi = t0 + k * bin_s, t0 + (k + 1) * bin_s
            line[k] += (min(b, hi) - max(a, lo)) / bin_s
    return {"rows": rows, "t0": t0, "bin_s": bin_s,
            "values": [[round(v, 3) for v in line] for line in values]}


def series(samples) -> dict:
    """``node_stats.NodeSample``s -> columns for the charts."""
    return {
        "t": [s.time for s in samples],
        "cpus_busy": [s.num_cpus_busy for s in samples],
        "num_cpus": [s.num_cpus for s in samples],
        "cpu_percent": [s.cpu_percent for s in samples],
        "mem_used_bytes": [s.mem_used_bytes for s in samples],
        "mem_total_bytes": [s.mem_total_bytes for s in samples],
        "store_used_bytes": [s.object_store_used_bytes for s in samples],
        "store_capacity_bytes": [s.object_store_capacity_bytes for s in samples],
    }


__all__ = ["completion_histogram", "heat_map", "series"]
