"""The raylet's heartbeat and the head's dead-node monitor (``raylet/monitor.py``), over
the in-memory GCS with an injected clock: who gets marked dead and when, the grace
after a GCS outage, a late beat or a head takeover, and a node that finds itself dead.
No processes (the multi-node suites run the same code in real raylets)."""

import asyncio
import logging

import pytest

from ray._private.gcs import InMemoryGcs, keys
from ray._private.raylet.monitor import NodeMonitor
from ray.exceptions import GcsUnavailableError

TIMEOUT_S = 10.0


@pytest.fixture
def monitor_log(caplog):
    """caplog for the monitor's logger itself: once ``ray`` is imported its logger does
    not propagate to the root (as in Ray), where caplog listens by default."""
    logger = logging.getLogger("ray._private.raylet.monitor")
    propagate = logger.propagate
    logger.addHandler(caplog.handler)
    logger.propagate = False  # (each record once, whether or not "ray" propagates)
    caplog.set_level(logging.INFO, logger=logger.name)
    try:
        yield caplog
    finally:
        logger.removeHandler(caplog.handler)
        logger.propagate = propagate


class _Clock:
    def __init__(self, now=1000.0):
        self.now = now

    def __call__(self):
        return self.now


class _Raylet:
    """What the monitor calls back: it records the calls. ``run_beats`` is how many
    beats ``NodeMonitor.run()`` makes before the raylet stops."""

    def __init__(self):
        self.registered = 0
        self.loads: list[float] = []
        self.beats: list[tuple[dict, dict, float]] = []
        self.stopped = False
        self.run_beats = 0

    def stopping(self) -> bool:
        if self.stopped:
            return True
        self.run_beats -= 1
        return self.run_beats < 0


class _FlakyGcs(InMemoryGcs):
    """The in-memory GCS, unreachable while ``down`` (as RedisGcs raises then)."""

    down = False

    def hset(self, key, field, value):
        if self.down:
            raise GcsUnavailableError("the GCS (Redis) stopped answering")
        super().hset(key, field, value)


def _monitor(gcs, clock, raylet, *, node_id="head", is_head=True, is_stopping=None):
    return NodeMonitor(
        gcs, node_id=node_id, is_head=is_head, period_s=0.0, timeout_s=TIMEOUT_S,
        gcs_address="127.0.0.1:6379",
        register_node=lambda: setattr(raylet, "registered", raylet.registered + 1),
        publish_load=raylet.loads.append,
        on_beat=lambda nodes, loads, now: raylet.beats.append((nodes, loads, now)),
        stop=lambda: setattr(raylet, "stopped", True),
        is_stopping=is_stopping or (lambda: raylet.stopped), clock=clock)


def _beat_for(monitor, clock, seconds):
    """Beat once a second (on time: no grace for a late beat) for ``seconds``."""
    for _ in range(int(seconds)):
        clock.now += 1.0
        monitor.beat()


def _add_node(gcs, node_id, last_beat, *, is_head=False, alive=True):
    gcs.hset_obj(keys.NODES, node_id, {"node_id": node_id, "alive": alive, "is_head": is_head})
    gcs.hset(keys.NODE_HEARTBEATS, node_id, str(last_beat).encode())


def _alive(gcs, node_id):
    return gcs.hget_obj(keys.NODES, node_id)["alive"]


def _announced(gcs):
    events = []
    gcs.subscribe_obj(keys.CHANNEL_NODES, lambda _channel, event: events.append(event))
    return events


@pytest.fixture
def cluster():
    gcs, clock, raylet = _FlakyGcs(), _Clock(), _Raylet()
    _add_node(gcs, "head", clock.now, is_head=True)
    return gcs, clock, raylet


def test_the_head_marks_a_node_dead_once_its_heartbeat_is_older_than_the_timeout(cluster):
    gcs, clock, raylet = cluster
    deaths = _announced(gcs)
    monitor = _monitor(gcs, clock, raylet)
    _add_node(gcs, "worker", clock.now)
    _beat_for(monitor, clock, TIMEOUT_S)
    assert _alive(gcs, "worker")  # exactly the timeout: not older than it
    assert float(gcs.hget(keys.NODE_HEARTBEATS, "head")) == clock.now
    assert raylet.loads[-1] == clock.now and len(raylet.beats) == TIMEOUT_S
    _beat_for(monitor, clock, 1)
    assert not _alive(gcs, "worker") and _alive(gcs, "head")
    assert gcs.hget_obj(keys.NODES, "worker")["death_time"] == clock.now
    assert deaths == [{"node_id": "worker", "alive": False}]
    nodes, _loads, now = raylet.beats[-1]
    assert now == clock.now and nodes["worker"]["alive"] is False  # the view handed on
    _beat_for(monitor, clock, 5)
    assert len(deaths) == 1  # judged once


def test_other_nodes_only_beat_they_never_judge(cluster):
    gcs, clock, raylet = cluster
    _add_node(gcs, "worker", clock.now)
    _add_node(gcs, "silent", 0.0)
    monitor = _monitor(gcs, clock, raylet, node_id="worker", is_head=False)
    _beat_for(monitor, clock, 3 * TIMEOUT_S)
    assert _alive(gcs, "silent") and _alive(gcs, "head")
    assert float(gcs.hget(keys.NODE_HEARTBEATS, "worker")) == clock.now


def test_after_a_gcs_outage_the_head_waits_a_full_timeout_before_judging(cluster, monitor_log):
    gcs, clock, raylet = cluster
    monitor = _monitor(gcs, clock, raylet, is_stopping=raylet.stopping)
    _add_node(gcs, "worker", clock.now)
    gcs.down = True
    raylet.run_beats = 3
    clock.now += 2 * TIMEOUT_S  # the outage: nobody's heartbeat lands
    asyncio.run(monitor.run())
    assert raylet.beats == [] and monitor_log.text.count("GCS unreachable") == 1
    gcs.down = False
    raylet.run_beats = 1
    asyncio.run(monitor.run())  # the GCS answers again: the grace starts now
    assert "GCS reachable again" in monitor_log.text and _alive(gcs, "worker")
    _beat_for(monitor, clock, TIMEOUT_S)
    assert _alive(gcs, "worker")  # within the grace
    _beat_for(monitor, clock, 1)
    assert not _alive(gcs, "worker")  # it did not beat again in a whole timeout


def test_a_late_beat_of_our_own_gives_everyone_grace_again(cluster):
    gcs, clock, raylet = cluster
    monitor = _monitor(gcs, clock, raylet)
    _add_node(gcs, "worker", clock.now)
    _beat_for(monitor, clock, TIMEOUT_S / 2)
    clock.now += TIMEOUT_S  # our loop stalled: the worker's silence was not watched
    monitor.beat()
    assert _alive(gcs, "worker")
    _beat_for(monitor, clock, TIMEOUT_S)
    assert _alive(gcs, "worker")
    _beat_for(monitor, clock, 1)
    assert not _alive(gcs, "worker")


def test_a_node_that_finds_itself_marked_dead_stops_without_using_the_view(cluster, monitor_log):
    gcs, clock, raylet = cluster
    _add_node(gcs, "worker", clock.now, alive=False)
    info = gcs.hget_obj(keys.NODES, "worker")
    gcs.hset_obj(keys.NODES, "worker", {**info, "death_time": clock.now - 3})
    monitor = _monitor(gcs, clock, raylet, node_id="worker", is_head=False)
    monitor.beat()
    assert raylet.stopped and raylet.beats == []
    assert "marked this node (worker) dead" in monitor_log.text
    assert "ray start --address=127.0.0.1:6379" in monitor_log.text


def test_a_node_missing_from_the_table_registers_again(cluster):
    gcs, clock, raylet = cluster
    monitor = _monitor(gcs, clock, raylet, node_id="new", is_head=False)
    monitor.beat()
    assert raylet.registered == 1 and len(raylet.beats) == 1 and not raylet.stopped


def test_a_new_head_marks_the_old_one_dead_at_once_and_waits_to_judge_the_rest(cluster):
    gcs, clock, raylet = cluster
    deaths = _announced(gcs)
    _add_node(gcs, "worker", 0.0)  # silent as far as the GCS knows
    clock.now += 3 * TIMEOUT_S
    monitor = _monitor(gcs, clock, raylet, node_id="new-head")
    _add_node(gcs, "new-head", clock.now, is_head=True)
    monitor.take_over_as_head()
    assert not _alive(gcs, "head") and _alive(gcs, "worker")
    assert deaths == [{"node_id": "head", "alive": False}]
    _beat_for(monitor, clock, TIMEOUT_S)
    assert _alive(gcs, "worker")  # a full timeout of its own first
    _beat_for(monitor, clock, 1)
    assert not _alive(gcs, "worker")


class _CountingGcs(InMemoryGcs):
    """Counts full reads of each hash (what costs O(nodes) at the GCS)."""

    def __init__(self):
        super().__init__()
        self.hgetalls: dict[str, int] = {}

    def hgetall(self, key):
        self.hgetalls[key] = self.hgetalls.get(key, 0) + 1
        return super().hgetall(key)


def test_beats_reread_the_node_and_load_tables_only_when_their_versions_move():
    gcs, clock, raylet = _CountingGcs(), _Clock(), _Raylet()
    _add_node(gcs, "head", clock.now, is_head=True)
    gcs.incr(keys.NODES_VERSION)
    gcs.incr(keys.NODE_LOADS_VERSION)
    monitor = _monitor(gcs, clock, raylet, node_id="worker", is_head=False)
    _add_node(gcs, "worker", clock.now)
    _beat_for(monitor, clock, 3)
    assert gcs.hgetalls[keys.NODES] == 1 and gcs.hgetalls[keys.NODE_LOADS] == 1
    gcs.hset_obj(keys.NODES, "other", {"node_id": "other", "alive": True})
    _beat_for(monitor, clock, 1)
    assert "other" not in raylet.beats[-1][0]  # written, version not bumped yet
    gcs.incr(keys.NODES_VERSION)
    _beat_for(monitor, clock, 1)
    assert "other" in raylet.beats[-1][0] and gcs.hgetalls[keys.NODES] == 2
    gcs.hset_obj(keys.NODE_LOADS, "other", {"available": {"CPU": 1.0}})
    gcs.incr(keys.NODE_LOADS_VERSION)
    _beat_for(monitor, clock, 1)
    assert raylet.beats[-1][1]["other"] == {"available": {"CPU": 1.0}}
    assert gcs.hgetalls[keys.NODE_LOADS] == 2 and gcs.hgetalls[keys.NODES] == 2


def test_beats_reread_the_tables_every_half_timeout_whatever_the_versions_say():
    gcs, clock, raylet = _CountingGcs(), _Clock(), _Raylet()
    _add_node(gcs, "head", clock.now, is_head=True)
    gcs.incr(keys.NODES_VERSION)
    gcs.incr(keys.NODE_LOADS_VERSION)
    monitor = _monitor(gcs, clock, raylet, node_id="head")
    _beat_for(monitor, clock, TIMEOUT_S)
    assert gcs.hgetalls[keys.NODES] == 2 and gcs.hgetalls[keys.NODE_LOADS] == 2


def test_tables_without_versions_are_read_every_beat_and_a_death_bumps_the_node_version(
        cluster):
    gcs, clock, raylet = cluster
    monitor = _monitor(gcs, clock, raylet)
    _add_node(gcs, "worker", clock.now)
    _beat_for(monitor, clock, TIMEOUT_S)
    assert monitor.nodes.reads == TIMEOUT_S  # nobody bumped: every beat reads
    assert gcs.get(keys.NODES_VERSION) is None
    _beat_for(monitor, clock, 1)
    assert not _alive(gcs, "worker") and int(gcs.get(keys.NODES_VERSION)) == 1


def test_cluster_resources_reads_the_node_table_only_after_a_node_joined_or_left():
    from ray._private.gcs.versioned import VersionedTable, bump_version
    from ray._private.runtime import cluster_info

    gcs = InMemoryGcs()
    gcs.hset_obj(keys.NODES, "a", {"node_ip": "10.0.0.1", "resources": {"CPU": 2.0}})
    bump_version(gcs, keys.NODES_VERSION)
    table = VersionedTable(keys.NODES, keys.NODES_VERSION, refresh_s=60)
    assert cluster_info.cluster_resources(gcs, table) == {"CPU": 2.0}
    assert cluster_info.cluster_resources(gcs, table) == {"CPU": 2.0}
    assert table.reads == 1  # the second call read only the counter
    gcs.hset_obj(keys.NODES, "b", {"node_ip": "10.0.0.2", "resources": {"CPU": 1.0}})
    bump_version(gcs, keys.NODES_VERSION)  # (every writer of the node table does)
    assert cluster_info.cluster_resources(gcs, table) == {"CPU": 3.0}
    gcs.hset_obj(keys.NODES, "a", {"node_ip": "10.0.0.1", "resources": {"CPU": 2.0},
                                   "alive": False})
    bump_version(gcs, keys.NODES_VERSION)
    assert cluster_info.cluster_resources(gcs, table) == {"CPU": 1.0}
    assert table.reads == 3
