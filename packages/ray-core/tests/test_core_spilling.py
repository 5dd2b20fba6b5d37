"""Object spilling: primaries move to disk under pressure and come back on demand.

Pure parts (batch choice, config parsing, urls) are tested directly; the rest through
the public API on real raylets, with a spill directory per test (``tmp_path``).
"""

from __future__ import annotations

import glob
import json
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import psutil
import pytest

import ray
from ray._private.config import build_config, parse_spilling_config
from ray._private.raylet.spilling import (
    DEFAULT_OBJECT_PREFIX,
    SpillConfig,
    SpilledCopy,
    choose_spill_batch,
    parse_spill_url,
    remove_orphaned_spill_dirs,
)
from ray.cluster_utils import Cluster

MIB = 1024**2
STORE = 100 * MIB


def spilling_config(directory, **extra) -> dict:
    return {
        "object_spilling_config": json.dumps(
            {"type": "filesystem", "params": {"directory_path": str(directory)}}),
        "min_spilling_size": 0,
        **extra,
    }


def spill_files(directory) -> list[str]:
    found = []
    for root, _dirs, files in os.walk(directory):
        found += [os.path.join(root, f) for f in files]
    return found


def wait_until(predicate, timeout_s=20.0, what="condition"):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


# --- pure parts ---------------------------------------------------------------------------
def test_batch_takes_oldest_objects_until_the_target():
    candidates = [(b"a", 10), (b"b", 10), (b"c", 10), (b"d", 10)]
    assert choose_spill_batch(candidates, bytes_wanted=15, min_spilling_size=0,
                              max_count=10) == [b"a", b"b"]
    # min_spilling_size fuses more objects into the file than strictly needed
    assert choose_spill_batch(candidates, bytes_wanted=5, min_spilling_size=30,
                              max_count=10) == [b"a", b"b", b"c"]
    assert choose_spill_batch(candidates, bytes_wanted=100, min_spilling_size=0,
                              max_count=2) == [b"a", b"b"]
    assert choose_spill_batch([], bytes_wanted=100, min_spilling_size=0, max_count=2) == []


def test_spilling_config_parses_rays_json_and_names_what_is_wrong():
    assert parse_spilling_config("") == ((), -1)
    text = json.dumps({"type": "filesystem", "params": {"directory_path": ["/a", "/b"],
                                                         "buffer_size": 1 << 20}})
    assert parse_spilling_config(text) == (("/a", "/b"), 1 << 20)
    with pytest.raises(ValueError, match="only 'filesystem'"):
        parse_spilling_config(json.dumps({"type": "smart_open", "params": {"uri": "s3://x"}}))
    with pytest.raises(ValueError, match="directory_path"):
        parse_spilling_config(json.dumps({"type": "filesystem", "params": {}}))
    with pytest.raises(ValueError, match="not supported"):
        parse_spilling_config(json.dumps({"type": "filesystem",
                                          "params": {"directory_path": "/a", "bogus": 1}}))
    with pytest.raises(ValueError, match="valid JSON"):
        parse_spilling_config("{nope")
    with pytest.raises(ValueError, match="object_spilling_threshold"):
        build_config({"object_spilling_threshold": 1.5})


def test_spill_config_defaults_to_the_session_directory_and_directory_shorthand_wins():
    assert SpillConfig.from_ray_config(build_config(), "/s").directories == ("/s",)
    config = build_config({"object_spilling_directory": "/d",
                           "object_spilling_config": spilling_config("/c")[
                               "object_spilling_config"]})
    assert SpillConfig.from_ray_config(config, "/s").directories == ("/d",)


def test_config_reads_ray_environment_variables(monkeypatch):
    monkeypatch.setenv("RAY_object_spilling_threshold", "0.5")
    monkeypatch.setenv("RAY_automatic_object_spilling_enabled", "false")
    config = build_config()
    assert config.object_spilling_threshold == 0.5
    assert config.automatic_object_spilling_enabled is False
    monkeypatch.setenv("RAY_min_spilling_size", "lots")
    with pytest.raises(ValueError, match="RAY_min_spilling_size"):
        build_config()


def test_spilled_copy_url_is_rays_form():
    copy = SpilledCopy("/d/f", record_offset=100, data_offset=136, data_size=64,
                       metadata=b"meta")
    assert copy.url == "/d/f?offset=100&size=100"
    assert parse_spill_url(copy.url) == ("/d/f", 100, 100)


def test_orphaned_spill_dirs_of_dead_raylets_are_removed(tmp_path):
    session = tmp_path / "session"
    records = session / "spilled_objects"
    records.mkdir(parents=True)
    dead_dir, live_dir = tmp_path / "dead", tmp_path / "live"
    for directory in (dead_dir, live_dir):
        directory.mkdir()
        (directory / "obj").write_bytes(b"x")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (records / "a.json").write_text(json.dumps({"pid": dead.pid, "directories": [str(dead_dir)]}))
    (records / "b.json").write_text(json.dumps({"pid": os.getpid(),
                                                "directories": [str(live_dir)]}))
    assert remove_orphaned_spill_dirs(str(session)) == [str(dead_dir)]
    assert not dead_dir.exists() and live_dir.exists()


# --- one node ---------------------------------------------------------------------------------
@pytest.fixture
def spilling_cluster(tmp_path):
    spill_dir = tmp_path / "spill"
    ray.init(num_cpus=2, object_store_memory=STORE, _system_config=spilling_config(spill_dir))
    yield spill_dir
    ray.shutdown()


def test_puts_four_times_the_store_size_all_come_back_intact(spilling_cluster):
    refs = [ray.put(np.full(10 * MIB, i, dtype=np.uint8)) for i in range(40)]  # 400 MiB
    assert spill_files(spilling_cluster), "nothing was spilled"
    for i, ref in enumerate(refs):
        value = ray.get(ref)
        assert value.shape == (10 * MIB,) and value[0] == i and value[-1] == i
        del value
    # In reverse as well: objects restored and evicted again come back once more.
    for i in reversed(range(len(refs))):
        assert ray.get(refs[i])[123] == i
    del refs, ref
    wait_until(lambda: not spill_files(spilling_cluster), what="spill files to be deleted")


def test_tasks_produce_and_consume_spilled_objects(spilling_cluster):
    @ray.remote
    def make(i):
        return np.full(8 * MIB, i % 251, dtype=np.uint8)

    @ray.remote
    def check(array, i):
        return int(array[0]) == i % 251 and int(array[-1]) == i % 251

    made = [make.remote(i) for i in range(50)]  # 400 MiB of task results
    ray.wait(made, num_returns=len(made), timeout=120)
    assert spill_files(spilling_cluster)
    assert all(ray.get([check.remote(ref, i) for i, ref in enumerate(made)], timeout=120))


def test_spilled_object_survives_a_reader_and_is_freed_with_its_ref(spilling_cluster):
    first = ray.put(np.arange(5 * MIB, dtype=np.int64))  # 40 MiB
    held = ray.get(first)  # a reader pins it: it cannot be spilled while read
    others = [ray.put(np.zeros(10 * MIB, dtype=np.uint8)) for _ in range(12)]
    np.testing.assert_array_equal(held[:10], np.arange(10))
    del held
    more = [ray.put(np.zeros(10 * MIB, dtype=np.uint8)) for _ in range(8)]
    assert ray.get(first)[-1] == 5 * MIB - 1
    del first, others, more
    wait_until(lambda: not spill_files(spilling_cluster), what="spill files to be deleted")


def test_an_object_bigger_than_the_store_still_raises_store_full(spilling_cluster):
    with pytest.raises(ray.exceptions.ObjectStoreFullError):
        ray.put(np.zeros(STORE + MIB, dtype=np.uint8))


def test_without_spilling_a_full_store_raises(tmp_path):
    ray.init(num_cpus=1, object_store_memory=STORE,
             _system_config={"automatic_object_spilling_enabled": False})
    try:
        with pytest.raises(ray.exceptions.ObjectStoreFullError):
            _refs = [ray.put(np.zeros(10 * MIB, dtype=np.uint8)) for _ in range(20)]
    finally:
        ray.shutdown()


def test_bad_spilling_config_fails_at_init():
    with pytest.raises(ValueError, match="only 'filesystem'"):
        ray.init(num_cpus=1, _system_config={
            "object_spilling_config": json.dumps({"type": "s3", "params": {}})})
    assert not ray.is_initialized()


# --- several nodes --------------------------------------------------------------------------
@pytest.mark.multinode
def test_another_node_pulls_an_object_straight_from_the_spill_file(tmp_path):
    spill_dir = tmp_path / "spill"
    cluster = Cluster()
    try:
        cluster.add_node(num_cpus=1, object_store_memory=STORE,
                         _internal_config=json.dumps(spilling_config(spill_dir)))
        cluster.add_node(num_cpus=1, object_store_memory=STORE, resources={"far": 1})
        ray.init(address=cluster.address)

        @ray.remote(resources={"far": 1})
        def checksum(*arrays):
            return [int(a[0]) + int(a[-1]) for a in arrays]

        refs = [ray.put(np.full(10 * MIB, i, dtype=np.uint8)) for i in range(25)]
        assert spill_files(spill_dir)
        assert ray.get(checksum.remote(*refs[:5]), timeout=120) == [2 * i for i in range(5)]
    finally:
        ray.shutdown()
        cluster.shutdown()
    assert not os.path.exists(spill_dir) or not spill_files(spill_dir)


# --- ray start / ray stop -------------------------------------------------------------------
def test_a_killed_raylet_leaves_no_spill_files_after_ray_stop(tmp_path):
    spill_dir = tmp_path / "spill"
    temp = str(tmp_path / "ray")
    cli = [sys.executable, "-m", "ray.scripts.cli"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = subprocess.run(
        cli + ["start", "--head", "--port", str(port), "--num-cpus", "1",
               "--node-ip-address", "127.0.0.1", "--temp-dir", temp,
               "--object-store-memory", str(STORE),
               "--internal-config", json.dumps(spilling_config(spill_dir))],
        capture_output=True, text=True, timeout=120)
    try:
        assert started.returncode == 0, started.stderr
        driver = (
            "import numpy as np, ray\n"
            f"ray.init(address='127.0.0.1:{port}')\n"
            "refs = [ray.put(np.full(10 * 2**20, i, dtype=np.uint8)) for i in range(25)]\n"
            "assert ray.get(refs[0])[0] == 0\n"
            "print('PUT', flush=True)\n"
            "import sys; sys.stdin.read()\n"  # keeps the refs alive until killed
        )
        proc = subprocess.Popen([sys.executable, "-c", driver], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout.readline().strip() == "PUT"
            assert spill_files(spill_dir)
            pids = {}  # (session_latest links to the session too)
            for path in glob.glob(f"{temp}/session_*/pids.json"):
                with open(path) as f:
                    pids.update(json.load(f))
            [raylet] = [psutil.Process(pid) for name, pid in pids.items()
                        if name.startswith("raylet-")]
            raylet.send_signal(signal.SIGKILL)
            raylet.wait(10)
            assert spill_files(spill_dir)  # a killed raylet cannot clean up
        finally:
            proc.kill()
            proc.wait()
    finally:
        stopped = subprocess.run(cli + ["stop", "--temp-dir", temp], capture_output=True,
                                 text=True, timeout=120)
    assert stopped.returncode == 0, stopped.stderr
    assert not spill_files(spill_dir)
    assert not [d for d in os.listdir(spill_dir) if d.startswith(DEFAULT_OBJECT_PREFIX)]


def test_object_spilling_directory_and_spill_stats_in_ray_memory(tmp_path):
    """Ray 2.x's ray.init(object_spilling_directory=...) spills there; `ray memory
    --stats-only` (and memory_summary) then report what was spilled and restored."""
    from ray._private.internal_api import memory_summary

    spill_dir = tmp_path / "spill-here"
    ray.init(num_cpus=1, object_store_memory=STORE, object_spilling_directory=str(spill_dir),
             _system_config={"min_spilling_size": 0})
    try:
        address = ray.get_runtime_context().gcs_address
        refs = [ray.put(np.full(10 * MIB // 8, i, dtype=np.int64)) for i in range(25)]
        assert spill_files(spill_dir), "nothing was spilled into object_spilling_directory"
        assert all(ray.get(ref)[0] == i for i, ref in enumerate(refs))  # restored
        wait_until(lambda: "Restored" in memory_summary(stats_only=True), what="stats")
        summary = memory_summary(stats_only=True)
        assert summary.startswith("--- Aggregate object store stats across all nodes ---")
        spilled = [line for line in summary.splitlines() if line.startswith("Spilled ")]
        restored = [line for line in summary.splitlines() if line.startswith("Restored ")]
        assert spilled and restored, summary
        assert int(spilled[0].split()[1]) >= 100 and int(spilled[0].split()[3]) >= 10, summary
        assert int(restored[0].split()[3]) >= 1, summary
        assert "objects, avg write throughput" in spilled[0]
        cli = subprocess.run([sys.executable, "-m", "ray.scripts.cli", "memory", "--stats-only",
                              "--address", address], capture_output=True, text=True, timeout=120)
        assert "Spilled " in cli.stdout and "Restored " in cli.stdout, cli.stdout + cli.stderr
        as_json = subprocess.run([sys.executable, "-m", "ray.scripts.cli", "memory",
                                  "--stats-only", "--json", "--address", address],
                                 capture_output=True, text=True, timeout=120)
        stats = json.loads(as_json.stdout)
        assert stats["spilled_objects"] >= 10 and stats["restored_objects"] >= 1, stats
        full = memory_summary()  # the references table, then the same stats
        assert "OBJECT ID" in full and "Spilled " in full
        with pytest.raises(ValueError, match="object_spilling_directory must not be provided"):
            ray.shutdown()
            ray.init(address=address, object_spilling_directory=str(spill_dir))
    finally:
        ray.shutdown()
    with pytest.raises(ValueError, match="object_spilling_directory must be a directory"):
        ray.init(num_cpus=1, object_spilling_directory="")
    with pytest.raises(ValueError, match="automatic_object_spilling_enabled is off"):
        ray.init(num_cpus=1, object_spilling_directory=str(spill_dir),
                 _system_config={"automatic_object_spilling_enabled": False})
