"""Head faults: the GCS's Redis is killed and restarted while work runs.

With the append-only file on (``ray start --head --redis-persist``,
``Cluster.add_node(redis_persist=True)``) the restarted server reloads every table:
raylets and drivers reconnect on their own, running tasks finish, and new tasks,
actors and drivers work. See docs/architecture.md ("GCS") for what happens without it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

import ray
from ray.cluster_utils import Cluster

# Outages longer than the heartbeat timeout must not get live nodes declared dead.
CONFIG = '{"heartbeat_timeout_s": 4, "heartbeat_period_s": 0.2}'


@pytest.fixture
def persistent_cluster():
    cluster = Cluster(_internal_config=CONFIG)
    cluster.add_node(num_cpus=1, redis_persist=True)
    cluster.add_node(num_cpus=1, resources={"other": 1})
    yield cluster
    cluster.shutdown()


@ray.remote
def slow_square(x):
    time.sleep(3)
    return x * x


@ray.remote(max_restarts=1)
class Counter:
    def __init__(self):
        self.n = 0

    def add(self):
        self.n += 1
        return self.n


def test_work_survives_a_redis_restart_with_the_append_only_file(persistent_cluster):
    cluster = persistent_cluster
    ray.init(address=cluster.address)
    counter = Counter.remote()
    assert ray.get(counter.add.remote(), timeout=60) == 1
    running = [slow_square.remote(i) for i in range(2)]
    time.sleep(0.5)

    cluster.restart_redis(down_s=5.0)  # longer than the 4 s heartbeat timeout

    assert ray.get(running, timeout=60) == [0, 1]
    assert ray.get(counter.add.remote(), timeout=60) == 2

    @ray.remote
    def defined_after_restart(x):  # exported to the GCS after the restart
        return x + 1

    assert ray.get([defined_after_restart.remote(i) for i in range(4)], timeout=60) \
        == [1, 2, 3, 4]
    assert ray.get(defined_after_restart.options(resources={"other": 1}).remote(9),
                   timeout=60) == 10
    fresh = Counter.remote()
    assert ray.get(fresh.add.remote(), timeout=60) == 1

    time.sleep(5)  # over a heartbeat timeout: nobody was wrongly declared dead
    assert [n["Alive"] for n in ray.nodes()] == [True, True]

    code = (f"import ray; ray.init(address={cluster.address!r})\n"
            "print(ray.get(ray.remote(lambda: 'joined').remote()))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env=dict(os.environ))
    assert out.stdout.strip() == "joined", out.stderr[-2000:]


def test_node_death_after_a_redis_restart_is_still_noticed(persistent_cluster):
    cluster = persistent_cluster
    ray.init(address=cluster.address)
    cluster.restart_redis(down_s=0.5)
    cluster.remove_node(cluster.worker_nodes[0], allow_graceful=False)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if [n["Alive"] for n in ray.nodes()] == [True, False]:
            break
        time.sleep(0.2)
    assert [n["Alive"] for n in ray.nodes()] == [True, False]


def test_gcs_subscribers_resume_after_a_redis_restart(persistent_cluster):
    import threading

    from ray._private.gcs import connect

    cluster = persistent_cluster
    gcs = connect(cluster.address, cluster.redis_password)
    got = []
    arrived = threading.Event()

    def on_message(_channel, data):
        got.append(data)
        arrived.set()

    try:
        gcs.subscribe("test:ch", on_message, confirm=True)
        cluster.restart_redis(down_s=1.0)
        deadline = time.monotonic() + 20
        while not arrived.is_set() and time.monotonic() < deadline:
            try:
                gcs.publish("test:ch", b"after restart")
            except Exception:
                pass  # the publishing connection reconnects on a later try
            arrived.wait(0.2)
        assert got and got[-1] == b"after restart"
    finally:
        gcs.close()


@ray.remote
class Gated:
    """Its constructor returns once the file ``gate`` exists."""

    def __init__(self, gate):
        while not os.path.exists(gate):
            time.sleep(0.02)

    def ready(self):
        return "ok"


@ray.remote
class GatedOwner:
    def create(self, gate):
        self.gated = Gated.remote(gate)
        return self.gated  # not waited for: it is this actor's, the driver only calls it


def test_changes_published_before_the_driver_resubscribed_still_reach_its_waiters(
        persistent_cluster, deaf_subscriptions, tmp_path):
    """An actor owned by another process becomes ALIVE and a placement group is
    created after Redis came back but before the driver's pub/sub connection did, so
    both messages are lost; the driver reads the tables again once it re-subscribed,
    and the call and ray.get(pg.ready()) return promptly."""
    from ray._private import runtime
    from ray._private.gcs import keys
    from ray._private.runtime.placement_groups import CREATED, wait_state
    from ray.util.placement_group import placement_group, remove_placement_group

    cluster = persistent_cluster
    ray.init(address=cluster.address)
    gate = tmp_path / "gate"
    owner = GatedOwner.remote()  # (kept: the gated actor lives as long as its owner)
    gated = ray.get(owner.create.remote(str(gate)), timeout=60)
    call = gated.ready.remote()  # the driver subscribes to the actor's channel here
    holder = placement_group([{"other": 1}])
    assert holder.wait(30)  # (the driver subscribes to the group channel here)
    pg = placement_group([{"other": 1}])  # pending until the holder goes
    ready = pg.ready()
    gcs = runtime.current().gcs_client()

    with deaf_subscriptions(gcs, cut=lambda: cluster.restart_redis(down_s=0.5)):
        gate.touch()
        remove_placement_group(holder)
        deadline = time.monotonic() + 30
        while gcs.hget_obj(keys.ACTORS, gated._actor_id.hex()).get("state") != "ALIVE":
            assert time.monotonic() < deadline, "the actor never became ALIVE"
            time.sleep(0.02)
        assert wait_state(pg, CREATED, 30)
    released = time.monotonic()

    assert ray.get(call, timeout=15) == "ok"
    assert ray.get(ready, timeout=15) == pg
    assert time.monotonic() - released < 3


def test_lost_object_is_rebuilt_after_a_redis_restart(persistent_cluster):
    """Rebuilding needs the node-death event on pub/sub: it must survive the restart."""
    import numpy as np

    cluster = persistent_cluster
    ray.init(address=cluster.address)

    @ray.remote(resources={"other": 0.1}, max_retries=2)
    def produce():
        return np.full(200_000, 7)

    ref = produce.remote()
    ray.wait([ref], timeout=60)
    cluster.restart_redis(down_s=1.0)
    time.sleep(1.0)
    cluster.remove_node(cluster.worker_nodes[0], allow_graceful=False)
    _wait_dead_nodes(1)
    cluster.add_node(num_cpus=1, resources={"other": 1})
    assert ray.get(ref, timeout=60)[0] == 7


def _wait_dead_nodes(n: int, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while sum(not node["Alive"] for node in ray.nodes()) < n:
        assert time.monotonic() < deadline, ray.nodes()
        time.sleep(0.1)
    time.sleep(0.5)  # the death event reaches subscribers right after the table write


def test_without_the_append_only_file_old_definitions_fail_clearly():
    """Documented behaviour without --redis-persist: the restarted Redis is empty.
    Nodes re-register themselves; functions exported before the restart are gone and a
    task that needs one fails with an error naming the fix; new definitions work."""
    cluster = Cluster(_internal_config=CONFIG)
    try:
        cluster.add_node(num_cpus=1)
        ray.init(address=cluster.address)

        @ray.remote
        class Before:
            def ping(self):
                return "pong"

        first = Before.remote()  # exports the class to the GCS
        assert ray.get(first.ping.remote(), timeout=60) == "pong"
        cluster.restart_redis(down_s=0.5)
        deadline = time.monotonic() + 20  # the node re-registers at its next heartbeat
        while [n["Alive"] for n in ray.nodes()] != [True]:
            assert time.monotonic() < deadline, ray.nodes()
            time.sleep(0.1)
        second = Before.remote()  # a fresh worker must load the class: it is gone
        with pytest.raises(ray.exceptions.RayActorError, match="--redis-persist"):
            ray.get(second.ping.remote(), timeout=60)

        @ray.remote
        def after(x):
            return x + 1

        assert ray.get(after.remote(1), timeout=60) == 2
    finally:
        cluster.shutdown()


def test_gcs_calls_during_the_outage_raise_a_clear_ray_error(persistent_cluster):
    """Outages under ~4 s are bridged by redis-py's retries; a longer one makes
    GCS-backed calls raise GcsUnavailableError (a RayConnectionError naming what to do),
    not redis-py's errors; afterwards they work again."""
    import threading

    cluster = persistent_cluster
    ray.init(address=cluster.address)
    assert len(ray.nodes()) == 2
    restart = threading.Thread(target=cluster.restart_redis, kwargs={"down_s": 8.0})
    restart.start()
    try:
        time.sleep(0.5)
        with pytest.raises(ray.exceptions.GcsUnavailableError, match="--redis-persist") as info:
            ray.nodes()
        assert isinstance(info.value, ray.exceptions.RayConnectionError)
        assert "redis.exceptions" not in type(info.value).__module__
    finally:
        restart.join()
    deadline = time.monotonic() + 20
    while True:
        try:
            if len(ray.nodes()) == 2:
                break
        except ray.exceptions.GcsUnavailableError:
            pass
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert ray.get(slow_square.remote(3), timeout=60) == 9
