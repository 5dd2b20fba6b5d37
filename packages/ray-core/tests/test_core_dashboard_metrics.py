"""The dashboard's metrics as pure functions: completion-time histogram, heat map, series."""

import pytest

from ray._private.node_stats import NodeSample
from ray.dashboard import metrics


def test_histogram_has_log_bins_that_count_every_duration():
    durations = [0.001] * 5 + [0.01] * 3 + [1.0] + [0.0]
    h = metrics.completion_histogram(durations, bins=6)
    assert h["total"] == 10 and sum(h["counts"]) == 10
    # A zero-length run starts the scale at 1 us (the smallest bin), then one bin a decade.
    assert h["edges_s"][0] == pytest.approx(1e-6) and h["edges_s"][-1] == pytest.approx(1.0)
    assert h["counts"] == [1, 0, 0, 5, 3, 1]
    assert metrics.completion_histogram([]) == {"edges_s": [], "counts": [], "total": 0}


def test_heat_map_averages_running_tasks_per_node_and_bin():
    intervals = [("a", 0.0, 10.0), ("a", 0.0, 5.0), ("b", 5.0, 10.0)]
    m = metrics.heat_map(intervals, bins=2)
    assert m["rows"] == ["a", "b"] and m["bin_s"] == 5.0
    assert m["values"] == [[2.0, 1.0], [0.0, 1.0]]
    half = metrics.heat_map([("a", 2.5, 5.0)], start=0.0, end=10.0, bins=2)
    assert half["values"] == [[0.5, 0.0]]
    assert metrics.heat_map([])["rows"] == []


def test_series_turns_samples_into_columns():
    samples = [NodeSample(1.0, 50.0, 1.0, 2.0, 10, 100, 5, 50),
               NodeSample(2.0, 25.0, 0.0, 2.0, 20, 100, 0, 50)]
    s = metrics.series(samples)
    assert s["t"] == [1.0, 2.0] and s["cpus_busy"] == [1.0, 0.0]
    assert s["store_used_bytes"] == [5, 0] and s["mem_total_bytes"] == [100, 100]
    assert NodeSample.from_wire(samples[0].to_wire()) == samples[0]
