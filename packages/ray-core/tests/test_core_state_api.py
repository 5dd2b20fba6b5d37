"""ray.util.state (list/get/summarize) against a live cluster, through the GCS and through
the dashboard's /api/v0 routes (Ray's envelope); filters, limits and errors."""

import time

import pytest

import ray
from ray.util import state
from ray.util.state import RayStateApiException
from ray.util.state.common import ListOptions, resource_from_name

SMALL_STORE = 128 * 1024**2


@pytest.fixture(scope="module")
def cluster():
    ctx = ray.init(num_cpus=2, object_store_memory=SMALL_STORE, include_dashboard=True)
    yield ctx
    ray.shutdown()


@ray.remote
class Counter:
    def __init__(self):
        self.n = 0

    def incr(self):
        self.n += 1
        return self.n


def _both(cluster):
    """The same query through the GCS (address=None) and the dashboard (http://)."""
    return [None, ray.get_webui_url()]


def test_list_nodes_and_get_node(cluster):
    for address in _both(cluster):
        (node,) = state.list_nodes(address=address)
        assert node.state == "ALIVE" and node.is_head_node and node.resources_total["CPU"] == 2
        assert node["node_ip"] == node.get("node_ip") == "127.0.0.1"
        assert state.get_node(node.node_id, address=address).node_id == node.node_id
    assert state.get_node("f" * 40) is None


def test_actors_are_listed_with_state_pid_and_filters(cluster):
    counter = Counter.options(name="counted").remote()
    assert ray.get(counter.incr.remote()) == 1
    doomed = Counter.remote()
    ray.get(doomed.incr.remote())
    ray.kill(doomed)
    deadline = time.time() + 10
    while time.time() < deadline:
        dead = state.list_actors(filters=[("state", "=", "DEAD")])
        if dead:
            break
        time.sleep(0.2)
    assert [a.class_name for a in dead] == ["Counter"]
    for address in _both(cluster):
        alive = state.list_actors(address=address, filters=[("state", "=", "alive"),
                                                             ("name", "=", "counted")])
        assert len(alive) == 1 and alive[0].pid is not None and alive[0].job_id
        detail = state.get_actor(alive[0].actor_id, address=address)
        assert detail.ray_namespace and detail.num_restarts == 0 and detail.is_detached is False
    not_dead = state.list_actors(filters=[("state", "!=", "DEAD"), ("class_name", "=", "Counter")])
    assert {a.name for a in not_dead} == {"counted"}
    summary = state.summarize_actors()["cluster"]
    assert summary["summary"]["Counter"]["state_counts"]["DEAD"] >= 1
    ray.kill(counter)


def test_limit_filters_and_bad_input_are_clear(cluster):
    with pytest.raises(ValueError, match="filterable"):
        state.list_actors(filters=[("no_such_column", "=", "x")])
    with pytest.raises(ValueError, match="predicate"):
        state.list_nodes(filters=[("state", "~", "ALIVE")])
    with pytest.raises(ValueError, match="limit"):
        state.list_nodes(limit=0)
    with pytest.raises(ValueError, match="Unknown resource 'widgets'"):
        resource_from_name("widgets")
    with pytest.raises(RayStateApiException, match="filterable"):
        state.list_actors(address=ray.get_webui_url(), filters=[("bogus", "=", "1")])
    actors = [Counter.remote() for _ in range(3)]
    ray.get([a.incr.remote() for a in actors])
    assert len(state.list_actors(limit=2)) == 2
    assert ListOptions(filters=[("a", "=", 1)]).filters == (("a", "=", 1),)
    for actor in actors:
        ray.kill(actor)


def test_workers_killed_just_before_a_listing_do_not_make_it_partial(cluster):
    # A killed actor's worker may get the listing's request and exit before it answers.
    for _ in range(3):
        actors = [Counter.remote() for _ in range(3)]
        ray.get([a.incr.remote() for a in actors])
        for actor in actors:
            ray.kill(actor)
        started = time.monotonic()
        assert any(w.worker_type == "DRIVER" for w in state.list_workers(timeout=20))
        assert time.monotonic() - started < 10


def test_workers_objects_jobs_and_placement_groups(cluster):
    held = ray.put(b"x" * 1000)
    for address in _both(cluster):
        workers = state.list_workers(address=address, detail=True)
        drivers = [w for w in workers if w.worker_type == "DRIVER"]
        assert drivers and all(w.is_alive for w in workers)
        objects = state.list_objects(address=address,
                                     filters=[("object_id", "=", held.hex())])
        assert objects and objects[0].reference_type == "LOCAL_REFERENCE"
        assert objects[0].object_size >= 1000 and objects[0].type == "DRIVER"
        jobs = state.list_jobs(address=address)
        mine = [j for j in jobs if j.job_id == ray.get_runtime_context().get_job_id()]
        assert mine and mine[0].type == "DRIVER" and mine[0].status == "RUNNING"
    assert state.get_objects(held.hex())[0].object_id == held.hex()
    summary = state.summarize_objects()["cluster"]
    assert summary["total_objects"] >= 1
    pg = ray.util.placement_group([{"CPU": 1}], name="state_pg")
    ray.get(pg.ready())
    for address in _both(cluster):
        (row,) = state.list_placement_groups(address=address, filters=[("name", "=", "state_pg")],
                                             detail=True)
        assert row.state == "CREATED" and row.bundles[0]["unit_resources"] == {"CPU": 1}
    ray.util.remove_placement_group(pg)
    del held


def test_local_mode_has_no_state_to_list():
    ray.shutdown()
    ray.init(local_mode=True)
    try:
        with pytest.raises(RayStateApiException, match="local_mode"):
            state.list_nodes()
    finally:
        ray.shutdown()


def test_an_address_with_no_cluster_is_an_error():
    with pytest.raises(Exception, match="Cannot reach|dashboard"):
        state.list_nodes(address="http://127.0.0.1:1")
