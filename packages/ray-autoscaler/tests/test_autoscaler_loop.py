"""StandardAutoscaler rounds on the in-memory provider: real setup commands, injected clock and load."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import uuid

import pytest

from ray.autoscaler.autoscaler import Monitor, StandardAutoscaler
from ray.autoscaler.config import load_config
from ray.autoscaler.load import ClusterLoad, NodeLoad, file_load_source
from ray.autoscaler.node_provider import get_node_provider
from ray.autoscaler.providers.memory import InMemoryNodeProvider
from ray.autoscaler.tags import (
    NODE_KIND_HEAD,
    NODE_KIND_WORKER,
    STATUS_UP_TO_DATE,
    STATUS_UPDATE_FAILED,
    TAG_RAY_NODE_KIND,
    TAG_RAY_NODE_STATUS,
    TAG_RAY_USER_NODE_TYPE,
)

MEMORY = "ray.autoscaler.providers.memory.InMemoryNodeProvider"


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class Load:
    """What the GCS would report: nodes by IP and the queued demand."""

    def __init__(self, provider):
        self.provider = provider
        self.busy: set[str] = set()
        self.demand: list[dict] = []

    def __call__(self) -> ClusterLoad:
        nodes = []
        for node_id in self.provider.non_terminated_nodes({}):
            tags = self.provider.node_tags(node_id)
            if tags.get(TAG_RAY_NODE_KIND) == NODE_KIND_WORKER and (
                tags.get(TAG_RAY_NODE_STATUS) != STATUS_UP_TO_DATE
            ):
                continue  # Ray is not running there yet
            total = (
                {"CPU": 2.0} if tags.get(TAG_RAY_NODE_KIND) == NODE_KIND_WORKER else {"CPU": 0.0}
            )
            free = {"CPU": 0.0} if node_id in self.busy else total
            nodes.append(NodeLoad(self.provider.internal_ip(node_id), total, free))
        return ClusterLoad(tuple(nodes), tuple(self.demand))


@pytest.fixture
def cluster(tmp_path):
    name = f"loop-{uuid.uuid4().hex[:6]}"
    config = load_config(
        {
            "cluster_name": name,
            "provider": {"type": "external", "module": MEMORY, "root_dir": str(tmp_path / "n")},
            "min_workers": 0,
            "max_workers": 4,
            "idle_timeout_minutes": 1,
            # Demand-driven only; the load-based rule has its own test.
            "target_utilization_fraction": 1.0,
            "head_node_type": "head",
            "available_node_types": {
                "head": {"resources": {"CPU": 0}},
                "cpu2": {"resources": {"CPU": 2}},
                "cpu8": {"resources": {"CPU": 8}},
            },
            "setup_commands": ["echo setup > ~/setup.txt"],
            "worker_start_ray_commands": ["echo $RAY_HEAD_IP > ~/head_ip.txt"],
        }
    )
    provider = get_node_provider(config.provider, name)
    provider.create_node({}, {TAG_RAY_NODE_KIND: NODE_KIND_HEAD, TAG_RAY_USER_NODE_TYPE: "head"}, 1)
    clock, load = Clock(), Load(provider)
    messages: list[str] = []
    autoscaler = StandardAutoscaler(config, provider, load, clock=clock, log=messages.append)
    yield autoscaler, provider, clock, load, messages, tmp_path / "n"
    autoscaler.wait_for_updaters(timeout_s=30)
    InMemoryNodeProvider.reset(name)


def workers(provider):
    return provider.non_terminated_nodes({TAG_RAY_NODE_KIND: NODE_KIND_WORKER})


def test_demand_launches_workers_that_get_set_up_and_then_count_as_capacity(cluster):
    autoscaler, provider, clock, load, messages, root = cluster
    load.demand = [{"CPU": 1}] * 4
    first = autoscaler.update()
    assert first.launch == {"cpu2": 2}
    autoscaler.wait_for_updaters(timeout_s=30)
    nodes = workers(provider)
    assert len(nodes) == 2
    head_ip = provider.internal_ip(
        provider.non_terminated_nodes({TAG_RAY_NODE_KIND: NODE_KIND_HEAD})[0]
    )
    for node in nodes:
        assert provider.node_tags(node)[TAG_RAY_NODE_STATUS] == STATUS_UP_TO_DATE
        assert (root / node / "home" / "setup.txt").read_text() == "setup\n"
        assert (root / node / "home" / "head_ip.txt").read_text().strip() == head_ip
    # The same demand, now that the nodes are live and busy, launches nothing more.
    load.busy = set(nodes)
    load.demand = []
    assert autoscaler.update().num_launches == 0


def test_idle_workers_are_terminated_after_the_idle_timeout(cluster):
    autoscaler, provider, clock, load, messages, root = cluster
    load.demand = [{"CPU": 2}]
    autoscaler.update()
    autoscaler.wait_for_updaters(timeout_s=30)
    (node,) = workers(provider)
    load.demand = []
    load.busy = {node}
    autoscaler.update()
    load.busy = set()
    clock.now += 30
    assert autoscaler.update().terminate == ()
    clock.now += 31
    assert autoscaler.update().terminate == (node,)
    assert workers(provider) == []
    assert not (root / node).exists()


def test_utilization_above_target_adds_a_worker(cluster):
    autoscaler, provider, clock, load, messages, root = cluster
    load.demand = [{"CPU": 2}]
    autoscaler.update()
    autoscaler.wait_for_updaters(timeout_s=30)
    load.demand, load.busy = [], set(workers(provider))
    assert autoscaler.update().num_launches == 0
    autoscaler.config = autoscaler.config.replace(target_utilization_fraction=0.8)
    autoscaler._config_source = lambda: autoscaler.config
    assert autoscaler.update().launch == {"cpu2": 1}


def test_infeasible_demand_warns_once_and_launches_nothing(cluster, caplog):
    autoscaler, provider, clock, load, messages, root = cluster
    load.demand = [{"CPU": 64}]
    with caplog.at_level(logging.WARNING, logger="ray.autoscaler.autoscaler"):
        for _ in range(5):
            clock.now += 10
            assert autoscaler.update().num_launches == 0
    warnings = [m for m in messages if m.startswith("WARNING")]
    assert len(warnings) == 1 and "{'CPU': 64} fits no node type" in warnings[0]
    assert workers(provider) == []


def test_failed_setup_is_tagged_and_the_node_replaced(cluster):
    autoscaler, provider, clock, load, messages, root = cluster
    autoscaler.config = autoscaler.config.replace(setup_commands=["exit 3"])
    autoscaler._config_source = lambda: autoscaler.config
    load.demand = [{"CPU": 2}]
    autoscaler.update()
    autoscaler.wait_for_updaters(timeout_s=30)
    (bad,) = workers(provider)
    assert provider.node_tags(bad)[TAG_RAY_NODE_STATUS] == STATUS_UPDATE_FAILED
    autoscaler.update()
    assert bad not in workers(provider)
    assert len(workers(provider)) == 1  # the replacement for the still-queued demand
    assert any("setup failed" in m for m in messages)


def test_min_and_initial_workers(cluster):
    autoscaler, provider, clock, load, messages, root = cluster
    autoscaler.config = autoscaler.config.replace(min_workers=1, initial_workers=3)
    autoscaler._config_source = lambda: autoscaler.config
    assert autoscaler.update().num_launches == 3
    autoscaler.wait_for_updaters(timeout_s=30)
    clock.now += 1
    autoscaler.update()
    clock.now += 61
    assert len(autoscaler.update().terminate) == 2
    assert len(workers(provider)) == 1


def test_changed_setup_commands_rerun_the_updater_on_live_workers(cluster):
    autoscaler, provider, clock, load, messages, root = cluster
    load.demand = [{"CPU": 2}]
    autoscaler.update()
    autoscaler.wait_for_updaters(timeout_s=30)
    (node,) = workers(provider)
    new = autoscaler.config.replace(setup_commands=["echo v2 > ~/setup.txt"])
    autoscaler._config_source = lambda: new
    autoscaler.update()
    autoscaler.wait_for_updaters(timeout_s=30)
    assert (root / node / "home" / "setup.txt").read_text() == "v2\n"


def test_status_shows_pending_then_active_nodes_the_demand_and_what_fits_no_type(cluster):
    autoscaler, provider, clock, load, messages, root = cluster
    autoscaler.wall_clock = lambda: 1_700_000_000.0
    load.demand = [{"CPU": 2}, {"CPU": 64}]
    autoscaler.update()
    status = autoscaler.status(update_interval_s=5)
    (worker,) = workers(provider)
    assert status.time_s == 1_700_000_000.0 and status.update_interval_s == 5
    assert status.cluster_name == autoscaler.config.cluster_name
    assert [(n.node_type, n.status) for n in status.active_nodes] == [("head", "up-to-date")]
    assert [(n.node_id, n.node_type, n.ip) for n in status.pending_nodes] == [
        (worker, "cpu2", provider.internal_ip(worker))]
    assert status.pending_demand == ({"CPU": 2.0}, {"CPU": 64.0})
    assert status.infeasible_demand == ({"CPU": 64.0},) and status.launched == {"cpu2": 1}
    autoscaler.wait_for_updaters(timeout_s=30)
    load.demand = []
    autoscaler.update()
    status = autoscaler.status()
    assert sorted((n.node_type, n.status) for n in status.active_nodes) == [
        ("cpu2", "up-to-date"), ("head", "up-to-date")]
    assert status.pending_nodes == () and status.pending_demand == () and status.launched == {}
    # A node reporting load that the provider did not launch is listed as unmanaged.
    real_load = load

    def with_stranger():
        got = real_load()
        return ClusterLoad(got.nodes + (NodeLoad("10.9.9.9", {"CPU": 4.0}, {"CPU": 4.0}),),
                           got.demand)

    autoscaler.load_source = with_stranger
    autoscaler.update()
    assert ("node_10.9.9.9", "10.9.9.9", "unmanaged") in [
        (n.node_type, n.ip, n.status) for n in autoscaler.status().active_nodes]


def test_status_keeps_the_nodes_whose_setup_failed(cluster):
    autoscaler, provider, clock, load, messages, root = cluster
    autoscaler.config = autoscaler.config.replace(setup_commands=["exit 3"])
    autoscaler._config_source = lambda: autoscaler.config
    load.demand = [{"CPU": 2}]
    autoscaler.update()
    autoscaler.wait_for_updaters(timeout_s=30)
    (bad,) = workers(provider)
    bad_ip = provider.internal_ip(bad)
    autoscaler.update()
    (failure,) = autoscaler.status().failed_nodes
    assert (failure.node_type, failure.ip, failure.reason) == ("cpu2", bad_ip, "update-failed")
    assert bad not in [n.node_id for n in autoscaler.status().pending_nodes]


def test_monitor_reports_each_rounds_status_and_outlives_a_failing_report():
    from ray.state import AutoscalerStatus

    class OneRound:
        rounds = 0

        def update(self):
            OneRound.rounds += 1

        def status(self, update_interval_s):
            return AutoscalerStatus(time_s=float(OneRound.rounds), cluster_name="c",
                                    update_interval_s=update_interval_s)

    reported, logged, failing = [], [], [True, True, False]

    def report(status):
        if failing.pop(0):
            raise ConnectionError("GCS down")
        reported.append(status)

    Monitor(OneRound(), interval_s=0, log=logged.append, report_status=report).run(max_rounds=3)
    assert [s.time_s for s in reported] == [3.0]
    assert len([m for m in logged if "could not publish the autoscaler status" in m]) == 1


def test_monitor_survives_a_failing_round():
    class Broken:
        calls = 0

        def update(self):
            Broken.calls += 1
            raise RuntimeError("redis went away")

    logged = []
    Monitor(Broken(), interval_s=0, log=logged.append).run(max_rounds=3)
    assert Broken.calls == 3 and all("redis went away" in m for m in logged)


def test_monitor_exits_once_its_head_is_gone_but_not_before_seeing_it():
    class Counting:
        rounds = 0

        def update(self):
            Counting.rounds += 1

    states = iter([False, False, True, True, False])
    logged = []
    Monitor(Counting(), interval_s=0, log=logged.append, head_alive=lambda: next(states)).run()
    assert Counting.rounds == 4 and "monitor exiting" in logged[-1]


def test_monitor_process_scales_up_from_a_load_file(tmp_path):
    """The real monitor entry point, as ray-core will start it, with load read from a file."""
    load_file = tmp_path / "load.json"
    load_file.write_text(json.dumps({"nodes": [], "demand": [{"CPU": 1}, {"CPU": 1}]}))
    config = tmp_path / "bootstrap.yaml"
    import yaml

    config.write_text(
        yaml.safe_dump(
            {
                "cluster_name": "monproc",
                "provider": {"type": "external", "module": MEMORY, "root_dir": str(tmp_path / "n")},
                "max_workers": 3,
                "head_node_type": "head",
                "available_node_types": {
                    "head": {"resources": {"CPU": 1}},
                    "w": {"resources": {"CPU": 1}},
                },
                "worker_start_ray_commands": ["echo started > ~/started"],
            }
        )
    )
    log_file = tmp_path / "logs" / "monitor.log"
    done = subprocess.run(
        [sys.executable, "-m", "ray.autoscaler.monitor", "--autoscaling-config", str(config),
         "--load-file", str(load_file), "--interval-s", "0", "--max-rounds", "2",
         "--log-file", str(log_file)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    log = log_file.read_text()
    assert "launching {'w': 2}" in log
    assert log.count("up to date") == 2
    started = sorted(p.read_text() for p in (tmp_path / "n").glob("*/home/started"))
    assert started == ["started\n", "started\n"]
    assert file_load_source(str(tmp_path / "missing.json"))() == ClusterLoad()


def test_gcs_load_source_reads_ray_state_cluster_load(monkeypatch):
    import types

    from ray.autoscaler.load import gcs_load_source

    calls = []
    state = types.ModuleType("ray.state")

    def cluster_load(address=None):
        calls.append(address)
        return {"nodes": [{"ip": "10.0.0.1", "total": {"CPU": 2}, "available": {"CPU": 1}}],
                "demand": [{"CPU": 2}]}  # fmt: skip

    state.cluster_load = cluster_load
    monkeypatch.setitem(sys.modules, "ray.state", state)
    load = gcs_load_source("10.0.0.1:6379")()
    assert calls == ["10.0.0.1:6379"]
    assert load.nodes[0].busy and load.demand == ({"CPU": 2.0},)


def test_gcs_load_source_without_core_support_says_what_to_do(monkeypatch):
    import types

    from ray.autoscaler.load import gcs_load_source

    monkeypatch.setitem(sys.modules, "ray.state", types.ModuleType("ray.state"))
    with pytest.raises(RuntimeError, match="--load-file"):
        gcs_load_source()
