"""`ray status`, `ray list|get|summary` and `ray logs` from a shell, against `ray start --head`."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

RAY = [sys.executable, "-m", "ray.scripts.cli"]


@pytest.fixture(scope="module")
def head(ray_start_head):
    info = ray_start_head("--resources", '{"widget": 3}')
    env = dict(os.environ)
    env.pop("RAY_ADDRESS", None)
    # A driver that leaves a detached actor behind (it prints) and a pending demand.
    script = textwrap.dedent(f"""
        import ray, time
        ray.init(address="{info['gcs']}")

        @ray.remote(num_cpus=0)
        class Talker:
            def say(self, text):
                print(text, flush=True)
                return text

        t = Talker.options(name="talker", lifetime="detached").remote()
        ray.get(t.say.remote("hello from the actor"))
        print(ray.get_runtime_context().get_job_id())
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    return info


def _ray(head, *args, timeout=60):
    env = dict(os.environ)
    env.pop("RAY_ADDRESS", None)
    return subprocess.run(RAY + list(args), capture_output=True, text=True, timeout=timeout,
                          env=env)


def test_ray_status_shows_nodes_usage_and_demand(head):
    out = _ray(head, "status", "--address", head["gcs"], "-v")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "Active:" in text and "(127.0.0.1, head)" in text and "(no dead nodes)" in text
    assert " 0/2 CPU" in text and " 0/3 widget" in text
    assert "object_store_memory" in text and "(no resource demands)" in text
    assert "no autoscaler" in text and "Host:" in text


def test_ray_list_get_and_summary_actors_and_nodes(head):
    listed = _ray(head, "list", "actors", "--address", head["gcs"], "--filter", "name=talker")
    assert listed.returncode == 0, listed.stderr
    assert "Talker" in listed.stdout and "ALIVE" in listed.stdout and "Total: 1" in listed.stdout
    rows = json.loads(_ray(head, "list", "actors", "--address", head["gcs"], "--format",
                           "json").stdout)
    actor_id = rows[0]["actor_id"]
    got = json.loads(_ray(head, "get", "actors", actor_id, "--address", head["gcs"]).stdout)
    assert got["class_name"] == "Talker" and got["is_detached"] is True
    nodes = json.loads(_ray(head, "list", "nodes", "--address", head["gcs"], "--format",
                            "json").stdout)
    assert nodes[0]["resources_total"]["widget"] == 3
    summary = _ray(head, "summary", "actors", "--address", head["gcs"])
    assert "Talker" in summary.stdout and "ALIVE: 1" in summary.stdout
    bad = _ray(head, "list", "actors", "--address", head["gcs"], "--filter", "colour=red")
    assert bad.returncode != 0 and "filterable" in bad.stderr
    worse = _ray(head, "list", "actors", "--address", head["gcs"], "--filter", "oops")
    assert worse.returncode != 0 and "key=value" in worse.stderr
    none = _ray(head, "get", "actors", "ff" * 16, "--address", head["gcs"])
    assert none.returncode != 0 and "No actor" in none.stderr


def test_ray_logs_lists_files_and_prints_an_actors_output(head):
    listing = _ray(head, "logs", "--address", head["gcs"])
    assert listing.returncode == 0, listing.stderr
    assert "raylet:" in listing.stdout and "worker_out:" in listing.stdout
    raylet = _ray(head, "logs", "raylet-*.out", "--address", head["gcs"], "--tail", "5")
    assert raylet.returncode == 0 and len(raylet.stdout.splitlines()) <= 5
    rows = json.loads(_ray(head, "list", "actors", "--address", head["gcs"], "--format",
                           "json").stdout)
    actor = _ray(head, "logs", "actor", "--id", rows[0]["actor_id"], "--address", head["gcs"])
    assert "hello from the actor" in actor.stdout
    missing = _ray(head, "logs", "nothing-like-this*", "--address", head["gcs"])
    assert missing.returncode != 0 and "No log file" in missing.stderr


# -- the autoscaler's record (pure: an in-memory GCS) ---------------------------------------
def _record(**overrides):
    from ray.state import AutoscalerFailure, AutoscalerNode, AutoscalerStatus

    fields = dict(
        time_s=__import__("time").time() - 2.0, cluster_name="demo", update_interval_s=5.0,
        active_nodes=(AutoscalerNode("h", "head", "10.0.0.1", "up-to-date"),
                      AutoscalerNode("a", "cpu4", "10.0.0.2", "up-to-date"),
                      AutoscalerNode("b", "cpu4", "10.0.0.3", "up-to-date")),
        pending_nodes=(AutoscalerNode("c", "gpu", "10.0.0.4", "setting-up"),),
        failed_nodes=(AutoscalerFailure("gpu", "10.0.0.9", 1_700_000_000.0),),
        pending_demand=({"GPU": 1.0},), infeasible_demand=({"CPU": 64.0},),
        launched={"gpu": 1})
    fields.update(overrides)
    return AutoscalerStatus(**fields)


def test_autoscaler_status_round_trips_and_bad_records_name_the_problem():
    from ray.state import AutoscalerStatus

    record = _record()
    assert AutoscalerStatus.from_json(record.to_json()) == record
    with pytest.raises(ValueError, match="not an autoscaler status record"):
        AutoscalerStatus.from_json(b'{"cluster_name": "x"}')
    with pytest.raises(ValueError, match="not an autoscaler status record"):
        AutoscalerStatus.from_json(b"plain text")


def test_ray_status_prints_the_autoscalers_record_as_ray_does():
    from ray._private.gcs import InMemoryGcs, keys
    from ray.scripts.status_cli import status_text

    gcs = InMemoryGcs()
    gcs.set(keys.AUTOSCALER_STATUS, _record().to_json())
    text = status_text(gcs)
    lines = text.splitlines()
    assert lines[0].startswith("======== Autoscaler status: ")
    assert lines[1:4] == ["Node status", "-" * 63, "Active:"]
    start = lines.index("Active:")
    assert lines[start:start + 7] == [
        "Active:", " 2 cpu4", " 1 head", "Pending:", " 10.0.0.4: gpu, setting-up",
        "Recent failures:", " gpu: NodeTerminated (ip: 10.0.0.9, update-failed at "
        f"{__import__('datetime').datetime.fromtimestamp(1_700_000_000.0):%H:%M:%S})"]
    assert "Resources" in lines and "Demands:" in lines
    assert " infeasible: {'CPU': 64.0} fits no node type" in lines
    assert any(line.startswith(" cluster demo: last round 2.") for line in lines)
    assert "WARNING" not in text


def test_ray_status_flags_a_stale_record_and_an_unreadable_one():
    from ray._private.gcs import InMemoryGcs, keys
    from ray.scripts.status_cli import status_text

    gcs = InMemoryGcs()
    gcs.set(keys.AUTOSCALER_STATUS, _record(time_s=__import__("time").time() - 120).to_json())
    assert "has not reported for a while" in status_text(gcs)
    gcs.set(keys.AUTOSCALER_STATUS, b"{}")
    text = status_text(gcs)
    assert "Cluster status" in text and "not an autoscaler status record" in text
