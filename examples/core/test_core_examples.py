"""The core walkthroughs (tutorial snippets, profiling loops, signals, asyncio) run at
small scale on one shared cluster and give the documented answers."""

import importlib.util
import json
import os

import pytest

import ray

HERE = os.path.dirname(__file__)


def _load(name):
    spec = importlib.util.spec_from_file_location(f"core_example_{name}", os.path.join(HERE, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def ray_cluster():
    # Five CPUs of sleeping tasks on a 2-core box, as the profiling page assumes.
    ray.init(num_cpus=5)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def tutorial(ray_cluster):
    return _load("tutorial")


def test_parallel_sleeps_take_about_one_sleep(tutorial):
    tutorial.example_parallel_sleeps(5, 0.3)  # start the workers first
    assert tutorial.example_parallel_sleeps(4, 0.5) < 4 * 0.5 * 0.75


def test_put_of_a_large_array_reports_its_write_speed(tutorial):
    assert tutorial.example_put_throughput(50 * 10**6) > 0.05  # GB/s; the 1 GB run is in benchmarks/


def test_dataflow_multiplies_two_zero_matrices(tutorial):
    result = tutorial.example_dataflow(20)
    assert result.shape == (20, 20) and not result.any()


def test_tree_reduce_sums_every_block(tutorial):
    import numpy as np

    expected = sum(np.random.default_rng(i).normal(size=1000) for i in range(16))
    assert np.allclose(tutorial.example_tree_reduce(16), expected)


def test_nested_tasks_give_the_documented_sums(tutorial):
    assert tutorial.example_nested_tasks() == [45, 55, 65, 75, 85]


def test_counter_actors_keep_separate_ordered_state(tutorial):
    first, then = tutorial.example_counters(10)
    assert first == [1] * 10
    assert then == [2, 3, 4, 5, 6]


def test_gym_environment_actor_steps_pong(tutorial):
    steps = tutorial.example_gym_actor("ALE/Pong-v5", 3)
    assert steps[-1][0] == (210, 160, 3)


def test_timeline_of_three_rounds_is_chrome_trace_json(tutorial, tmp_path):
    path = tmp_path / "timeline.json"
    x = 0
    for _ in range(3):
        x = 8 * (x + 1)
    assert tutorial.example_timeline(str(path)) == x == 584
    events = json.loads(path.read_text())
    assert sum(1 for e in events if "f_round" in e.get("name", "")) >= 24


def test_cluster_smoke_runs_nested_tasks_on_this_node(tutorial):
    counts = tutorial.example_cluster_smoke(50)
    assert sum(counts.values()) == 50 and os.uname().nodename in counts


def test_profiling_loops_show_the_documented_ordering(ray_cluster):
    profiling = _load("profiling")
    timings = profiling.main(["--smoke", "--no-profilers"])
    sleep_s = 0.1
    assert timings["ex1"] >= 5 * sleep_s  # serial gets
    assert timings["ex2"] < timings["ex1"] * 0.7  # parallel
    assert timings["ex3"] >= 5 * 0.6 * sleep_s  # bounded by the local work
    assert timings["ex4"] >= 5 * sleep_s  # one actor is serial
    # One actor vs five: at 0.1 s per call actor start-up would dominate; use 0.3 s.
    profiling.SLEEP_S = 0.3
    profiling.ex4()
    profiling.ex4_five_actors()
    assert profiling.TIMINGS["ex4_five_actors"] < profiling.TIMINGS["ex4"]


def test_profilers_name_ray_calls(ray_cluster):
    profiling = _load("profiling")
    profiling.SLEEP_S = 0.05
    report = profiling.cprofile_report(profiling.ex1)
    assert "get" in report and "function calls" in report
    pytest.importorskip("line_profiler")
    lines = profiling.line_profile_report(profiling.ex2)
    assert "Timer unit" in lines and "ray.get(list2)" in lines


def test_signals_and_asyncio(ray_cluster):
    out = _load("signals_and_async").main([])
    assert out["user_signal"] == "simple signal"
    assert out["error_signal"] == "ErrorSignal"
    assert out["actor_signals"] == sorted([f"a{i}" for i in range(5)] + [f"b{i}" for i in range(5)])
    assert out["async_gather"] == [0, 1, 4, 9, 16]


def test_tutorial_script_smoke_mode(ray_cluster, tmp_path):
    out = _load("tutorial").main(["--smoke", "--timeline", str(tmp_path / "t.json")])
    assert out["nested"] == [45, 55, 65, 75, 85]
