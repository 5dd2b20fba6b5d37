"""ray.experimental.tqdm_ray (bars from tasks drawn once on the driver) and the
ProgressBar utility for multi-task operations (ray.data's executor)."""

import json
import time

import pytest

import ray
from ray.experimental import progress_bar, tqdm_ray


@pytest.fixture
def manager(monkeypatch):
    fresh = tqdm_ray._BarManager()
    monkeypatch.setattr(tqdm_ray, "_manager", fresh)
    return fresh


def _state(**fields):
    base = {"__magic_token__": tqdm_ray.RAY_TQDM_MAGIC, "x": 0, "pos": 0, "desc": "d",
            "total": 10, "unit": "it", "ip": "1.2.3.4", "pid": 7, "uuid": "u1", "closed": False}
    base.update(fields)
    return tqdm_ray.RAY_TQDM_MAGIC + json.dumps(base)


def test_state_lines_become_bars_grouped_per_worker_and_stacked(manager):
    assert tqdm_ray.process_log_line("an ordinary line") is False
    assert tqdm_ray.process_log_line(tqdm_ray.RAY_TQDM_MAGIC + "{not json") is False
    assert tqdm_ray.process_log_line(_state(x=3)) is True
    assert tqdm_ray.process_log_line(_state(uuid="u2", pos=1, x=1)) is True
    assert tqdm_ray.process_log_line(_state(uuid="v1", pid=8, x=5)) is True
    bars = {(b["pid"], b["uuid"]): b for b in manager.bars()}
    assert bars[(7, "u1")]["x"] == 3 and len(bars) == 3
    offsets = {key: bar.offset for key, group in manager._groups.items()
               for bar in group.values()}
    assert offsets[("1.2.3.4", 7)] == 0 and offsets[("1.2.3.4", 8)] == 2  # below pid 7's two
    tqdm_ray.process_log_line(_state(x=10, closed=True))
    tqdm_ray.process_log_line(_state(uuid="u2", pos=1, x=1, closed=True))
    assert manager.closed_count == 2
    assert [bar.offset for bar in manager._groups[("1.2.3.4", 8)].values()] == [0]


def test_a_bar_in_the_driver_goes_straight_to_the_manager(manager, capsys):
    bar = tqdm_ray.tqdm(range(5), desc="local", flush_interval_s=0)
    assert list(bar) == [0, 1, 2, 3, 4]
    assert manager.closed_count == 1 and manager.bars() == []
    tqdm_ray.safe_print("printed once")
    assert capsys.readouterr().out.count("printed once") == 1
    with pytest.raises(ValueError, match="flush_interval_s"):
        tqdm_ray.tqdm(total=3, flush_interval_s=-1)


def test_bars_of_tasks_reach_the_driver_and_are_not_printed(manager, capfd):
    ray.init(num_cpus=1, object_store_memory=64 * 1024**2)
    try:
        @ray.remote
        def work(n):
            for _ in tqdm_ray.tqdm(range(n), desc="remote work", flush_interval_s=0):
                time.sleep(0.001)
            print("plain output from the task")
            return n

        assert ray.get(work.remote(20)) == 20
        deadline = time.time() + 20
        while manager.closed_count < 1 and time.time() < deadline:
            time.sleep(0.1)
        assert manager.closed_count == 1
        while "plain output" not in capfd.readouterr().out and time.time() < deadline:
            time.sleep(0.1)
        out = capfd.readouterr().out
        assert tqdm_ray.RAY_TQDM_MAGIC not in out
    finally:
        ray.shutdown()


def test_progress_bar_counts_finished_tasks_and_returns_values_in_order(monkeypatch):
    ray.init(num_cpus=2, object_store_memory=64 * 1024**2)
    try:
        @ray.remote
        def slow(i):
            time.sleep(0.01 * (5 - i))
            return i

        with progress_bar.ProgressBar("Map", total=5, unit="blocks", enabled=False) as bar:
            assert bar.fetch_until_complete([slow.remote(i) for i in range(5)]) == [0, 1, 2, 3, 4]
            assert bar.completed == 5 and not bar.enabled
        monkeypatch.setenv("RAY_DATA_DISABLE_PROGRESS_BARS", "1")
        assert progress_bar.ProgressBar("Sort", total=1).enabled is False
        monkeypatch.setattr(progress_bar, "_enabled_override", None)  # restored afterwards
        assert progress_bar.set_progress_bars(True) is False  # the env var said off
        shown = progress_bar.ProgressBar("Sort", total=2)
        assert shown.enabled
        shown.block_until_complete([slow.remote(1), slow.remote(2)])
        assert shown.completed == 2
        shown.close()
        with pytest.raises(ValueError, match="total"):
            progress_bar.ProgressBar("x", total=-1)
    finally:
        ray.shutdown()
