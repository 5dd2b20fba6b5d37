"""Global state, timeline and profiling: the pure pieces first, then a live cluster."""

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import ray
from ray._private import chrome_trace, profiling, state
from ray._private.gcs import InMemoryGcs, keys
from ray.cluster_utils import Cluster

# -- the bounded event buffer and its flush (no processes) ---------------------------------------


def test_event_buffer_stays_bounded_under_a_million_events_and_counts_the_rest():
    buffer = profiling.EventBuffer(capacity=1000)
    event = ("task:execute", "f", 0.0, 0.0, 1, None)
    for _ in range(1_000_000):
        buffer.append(event)
    assert len(buffer) == 1000
    events, dropped = buffer.drain()
    assert len(events) == 1000 and dropped == 999_000
    assert len(buffer) == 0 and buffer.drain() == ([], 0)


def test_event_buffer_rejects_a_useless_capacity():
    with pytest.raises(ValueError, match="max_profile_events_buffered"):
        profiling.EventBuffer(0)


def test_flush_ships_batches_trims_the_gcs_list_and_reports_drops():
    gcs = InMemoryGcs()
    buffer = profiling.EventBuffer(capacity=50)
    for i in range(80):
        buffer.append(("task:execute", f"f{i}", float(i), i + 0.5, 7, b"\x01" * 4))  # compact id
    sent = profiling.flush(gcs, buffer, "10.0.0.1", "worker:ab", batch_events=20, max_batches=2)
    assert sent == 51  # 50 kept + one event saying 30 were dropped
    batches = gcs.lrange(keys.PROFILE_EVENTS)
    assert len(batches) == 2  # 3 batches were written, the list keeps the newest 2
    events = profiling.decode_batches(batches)
    assert events[-1]["event_type"] == profiling.DROPPED_EVENT
    assert events[-1]["extra"]["dropped"] == 30
    assert events[0]["extra"]["task_id"] == "01010101" and events[0]["node_ip"] == "10.0.0.1"
    assert profiling.flush(gcs, buffer, "10.0.0.1", "worker:ab") == 0


def test_a_custom_span_with_unpackable_extra_data_is_kept_with_printable_values():
    gcs = InMemoryGcs()
    buffer = profiling.EventBuffer(capacity=10)
    buffer.append(("custom", "mine", 1.0, 2.0, 7, {"obj": object(), "n": 3, "s": "x"}))
    profiling.flush(gcs, buffer, "10.0.0.1", "worker:ab")
    (event,) = profiling.decode_batches(gcs.lrange(keys.PROFILE_EVENTS))
    assert event["extra"]["obj"].startswith("<object object at")
    assert (event["extra"]["n"], event["extra"]["s"]) == (3, "x")


def test_execution_spans_carry_the_owners_submit_time_and_dependencies():
    gcs = InMemoryGcs()
    buffer = profiling.EventBuffer(capacity=10)
    buffer.record("task:execute", "g", 2.0, [b"\x02" * 4, 1.5, [b"\x01" * 8]], end=2.5)
    buffer.record("task:execute", "f", 3.0, [b"\x03" * 4, None, []], end=3.5)
    profiling.flush(gcs, buffer, "10.0.0.1", "worker:ab")
    g, f = profiling.decode_batches(gcs.lrange(keys.PROFILE_EVENTS))
    assert g["extra"] == {"task_id": "02020202", "submitted": 1.5, "deps": ["01" * 8]}
    assert (g["start"], g["end"]) == (2.0, 2.5)
    assert f["extra"] == {"task_id": "03030303", "submitted": None}
    table = state.task_table([g, f])
    assert table["02020202"]["SubmitTime"] == 1.5 and table["03030303"]["SubmitTime"] is None


# -- Chrome-trace building (pure) ---------------------------------------------------------------


def _event(kind, label, start, end, pid, **extra):
    return {"event_type": kind, "name": label, "start": start, "end": end, "node_ip": "10.0.0.1",
            "worker": f"worker:{pid}", "pid": pid, "extra": extra}


def test_task_trace_has_scheduling_phases_dependency_arrows_and_named_rows():
    producer, consumer = "aa" * 12, "bb" * 12
    events = [
        _event("task:execute", "f", 1.1, 1.2, 20, task_id=producer, submitted=1.0),
        _event("task:fetch_arguments", "g", 1.25, 1.26, 21, task_id=consumer),
        _event("task:execute", "g", 1.3, 1.4, 21, task_id=consumer, submitted=1.0,
               deps=[producer + "01000000"]),
        _event("custom", "inner", 1.31, 1.32, 21, name="renamed", cname="good", key="v"),
    ]
    trace = chrome_trace.task_trace(events)
    by_phase = {}
    for ev in trace:
        by_phase.setdefault(ev["ph"], []).append(ev)
    names = {ev["args"]["name"] for ev in by_phase["M"]}
    assert {"Node 10.0.0.1", "worker 20", "worker 21"} <= names
    assert {ev["cat"] for ev in by_phase["X"]} == {"task:execute", "task:fetch_arguments", "custom"}
    custom = next(ev for ev in by_phase["X"] if ev["cat"] == "custom")
    assert custom["name"] == "renamed" and custom["cname"] == "good" and custom["args"] == {"key": "v"}
    begin = {ev["args"]["task_id"]: ev for ev in by_phase["b"]}
    end = {ev["id"]: ev for ev in by_phase["e"]}
    assert begin[consumer]["tid"] == 21  # drawn on the row of the worker that ran it
    execute_g = next(ev for ev in by_phase["X"] if ev["name"] == "g" and ev["cat"] == "task:execute")
    assert execute_g["args"] == {"task_id": consumer}  # phase and arrows, not slice args
    assert all(isinstance(ev["id"], int) for ev in by_phase["b"] + by_phase["s"])
    assert begin[consumer]["ts"] == pytest.approx(1.0e6)
    assert end[begin[consumer]["id"]]["ts"] == pytest.approx(1.3e6)
    (start,), (finish,) = by_phase["s"], by_phase["f"]
    assert start["id"] == finish["id"] and start["cat"] == "dependency"
    assert start["tid"] == 20 and start["ts"] <= 1.2e6 and start["ts"] >= 1.1e6
    assert finish["tid"] == 21 and finish["ts"] == pytest.approx(1.3e6) and finish["bp"] == "e"
    json.dumps(trace)  # the file chrome://tracing and Perfetto load


def test_transfer_trace_draws_send_and_receive_with_an_arrow():
    events = [dict(_event("transfer:receive", "ab", 2.0, 2.5, 30, object_id="ab" * 10,
                          size_bytes=1000, from_ip="10.0.0.2"))]
    trace = chrome_trace.transfer_trace(events)
    slices = [ev for ev in trace if ev["ph"] == "X"]
    assert sorted(ev["name"].split()[0] for ev in slices) == ["receive", "send"]
    assert {ev["pid"] for ev in slices} == {1, 2}
    assert [ev["ph"] for ev in trace if ev["ph"] in "sf"] == ["s", "f"]


@pytest.mark.multinode
def test_object_transfer_timeline_shows_pulls_between_nodes():
    # Runs before the module-scoped cluster below starts (one driver per process).
    c = Cluster()
    try:
        c.add_node(num_cpus=1)
        c.add_node(num_cpus=1, resources={"far": 1})
        ray.init(address=c.address)

        @ray.remote(resources={"far": 1})
        def consume(a):
            return int(a[-1])

        ref = ray.put(np.arange(400_000))
        assert ray.get(consume.remote(ref)) == 399_999
        trace = _wait_for(lambda: [e for e in ray.object_transfer_timeline() if e["ph"] == "X"])
        receive = next(e for e in trace if e["name"].startswith("receive"))
        assert receive["args"]["object_id"] == ref.hex()
        assert receive["args"]["size_bytes"] >= 400_000 * 8
        assert any(e["name"].startswith("send") for e in trace)
    finally:
        ray.shutdown()
        c.shutdown()


# -- a live cluster -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster(ray_module):
    yield ray_module


def _wait_for(fn, timeout_s=10.0):
    deadline = time.time() + timeout_s
    while True:
        value = fn()
        if value or time.time() > deadline:
            return value
        time.sleep(0.1)


def test_timeline_joins_each_reducer_to_its_inputs_with_dependency_arrows(cluster, tmp_path):
    @ray.remote
    def f(i):
        time.sleep(0.005)
        return i

    @ray.remote
    def g(*ys):
        return sum(ys)

    for _ in range(3):  # the 0.2 blog's demo: rounds of parallel f feeding one g
        assert ray.get(g.remote(*[f.remote(i) for i in range(4)])) == 6

    def arrows_into_g():
        trace = ray.timeline()
        g_tids = {(e["pid"], e["tid"], e["ts"]) for e in trace
                  if e["ph"] == "X" and e["name"].endswith(".g")}
        return [e for e in trace if e["ph"] == "f" and (e["pid"], e["tid"], e["ts"]) in g_tids]

    assert len(_wait_for(lambda: len(arrows_into_g()) >= 12 and arrows_into_g())) >= 12
    tasks = ray.tasks()
    g_tasks = [t for t in tasks.values() if t["FunctionName"].endswith(".g")]
    assert len(g_tasks) >= 3 and all(t["SubmitTime"] <= t["StartTime"] for t in g_tasks)
    assert ray.tasks(g_tasks[0]["TaskID"]) == g_tasks[0]
    path = tmp_path / "trace.json"
    ray.timeline(filename=str(path))
    phases = {e["ph"] for e in json.loads(path.read_text())}
    assert {"M", "X", "b", "e", "s", "f"} <= phases


def test_memory_table_reports_size_owner_and_reference_type_cluster_wide(cluster):
    big = ray.put(np.zeros(200_000, dtype=np.uint8))
    small = ray.put(b"tiny")

    @ray.remote
    class Holder:
        def hold(self, refs):
            self.refs = refs  # a borrowed ref, held in another process
            return True

    holder = Holder.remote()
    assert ray.get(holder.hold.remote([small]))
    rt = ray._private.runtime.current()
    rows = state.memory_table(rt.gcs, timeout_s=3.0)
    mine = {r["object_id"]: r for r in rows if r["mode"] == "driver" and r["pid"] == rt_pid()}
    assert mine[big.hex()]["size_bytes"] >= 200_000
    assert mine[big.hex()]["location"].startswith("plasma:")
    assert mine[big.hex()]["reference_type"] == "LOCAL_REFERENCE"
    assert mine[small.hex()]["owned"] and mine[small.hex()]["location"] == "inline"
    borrowed = [r for r in rows if r["object_id"] == small.hex() and r["mode"] == "worker"]
    assert borrowed and borrowed[0]["owner"] == mine[small.hex()]["owner"]
    assert ray.objects(big.hex())["DataSize"] >= 200_000
    ray.kill(holder)


def rt_pid():
    return os.getpid()


def test_ray_memory_cli_prints_the_drivers_objects(cluster):
    ref = ray.put(np.ones(50_000))
    address = ray._private.runtime.current().address_info["redis_address"]
    out = subprocess.run(
        [sys.executable, "-m", "ray.scripts.cli", "memory", "--address", address,
         "--redis-password", ray._private.runtime.current().gcs._password or ""],
        capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert ref.hex() in out.stdout and "LOCAL_REFERENCE" in out.stdout
    assert "distinct owned objects" in out.stdout


def test_ray_timeline_cli_writes_the_clusters_trace(cluster, tmp_path):
    @ray.remote
    def traced_by_the_cli():
        return 1

    ray.get([traced_by_the_cli.remote() for _ in range(3)])
    rt = ray._private.runtime.current()
    rt.profiler.flush()
    path = tmp_path / "cli-trace.json"

    def written():
        out = subprocess.run(
            [sys.executable, "-m", "ray.scripts.cli", "timeline", "--address",
             rt.address_info["redis_address"], "--redis-password", rt.gcs._password or "",
             str(path)], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return [e for e in json.loads(path.read_text())
                if e["ph"] == "X" and e["name"].endswith("traced_by_the_cli")]

    assert _wait_for(lambda: len(written()) >= 3)


def test_errors_of_every_job_are_kept_in_the_gcs(cluster):
    @ray.remote
    def fails():
        raise KeyError("stored error")

    with pytest.raises(ray.exceptions.RayTaskError):
        ray.get(fails.remote())
    stored = _wait_for(lambda: [e for e in ray.errors(all_jobs=True)
                                if "stored error" in e["message"]])
    assert stored and stored[0]["name"].endswith("fails") and stored[0]["job_id"]
    assert any("stored error" in e["message"] for e in ray.error_info())


def test_profile_rejects_non_dict_extra_data():
    with pytest.raises(TypeError, match="extra_data"):
        ray.profile("x", extra_data=["not", "a", "dict"])


def test_ray_stack_shows_the_frame_a_running_actor_is_in(cluster):
    import shutil

    if not (shutil.which("py-spy") or os.path.exists(os.path.join(os.path.dirname(sys.executable),
                                                                   "py-spy"))):
        pytest.skip("ray stack needs py-spy (pip install py-spy)")

    @ray.remote
    class Busy:
        def sleep_in_a_recognisable_frame(self):
            time.sleep(30)

    busy = Busy.remote()
    busy.sleep_in_a_recognisable_frame.remote()
    gcs = ray._private.runtime.current().gcs
    assert _wait_for(lambda: any((w.get("running") or {}).get("name") == "Busy"
                                 for w in state.introspect(gcs, timeout_s=1.0)))
    out = subprocess.run([sys.executable, "-m", "ray.scripts.cli", "stack"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "sleep_in_a_recognisable_frame" in out.stdout and "ray::raylet" in out.stdout
    ray.kill(busy)
