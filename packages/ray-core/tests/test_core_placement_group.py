"""Placement groups on a real one-node cluster (4 CPUs): reservation, ready/wait,
bundle index, pending groups that become ready, removal (resources back, work inside
killed), names, capture of child tasks, NodeAffinity, errors."""

import time

import pytest

import ray
from ray.exceptions import RayActorError, TaskPlacementGroupRemoved, TaskUnschedulableError
from ray.util.placement_group import (
    get_current_placement_group,
    get_placement_group,
    placement_group,
    placement_group_table,
    remove_placement_group,
)
from ray.util.scheduling_strategies import (
    NodeAffinitySchedulingStrategy,
    PlacementGroupSchedulingStrategy,
)


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=4, num_gpus=2, object_store_memory=128 * 1024**2,
             _internal_config='{"heartbeat_period_s": 0.1}')
    yield
    ray.shutdown()


def _available_cpus(expected, timeout_s=10):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ray.available_resources().get("CPU", 0) == expected:
            return True
        time.sleep(0.05)
    return False


@ray.remote
def assigned():
    return ray.get_runtime_context().get_assigned_resources()


@ray.remote(num_cpus=1)
class Sleeper:
    def ping(self):
        return "pong"


def test_group_reserves_bundles_and_removal_gives_them_back(cluster):
    pg = placement_group([{"CPU": 1}, {"CPU": 2}], strategy="PACK")
    assert ray.get(pg.ready(), timeout=10) == pg
    assert pg.wait(5)
    entry = placement_group_table(pg)
    node = ray.get_runtime_context().get_node_id()
    assert entry["state"] == "CREATED" and entry["bundles_to_node_id"] == {0: node, 1: node}
    assert entry["bundles"] == {0: {"CPU": 1}, 1: {"CPU": 2}}
    assert _available_cpus(1)
    remove_placement_group(pg)
    assert placement_group_table(pg)["state"] == "REMOVED"
    assert _available_cpus(4)


def test_task_runs_in_the_bundle_it_names(cluster):
    pg = placement_group([{"CPU": 1}, {"CPU": 1}])
    ray.get(pg.ready(), timeout=10)
    pg_hex = pg.id.hex()
    got = ray.get(assigned.options(
        scheduling_strategy=PlacementGroupSchedulingStrategy(pg, 1)).remote(), timeout=10)
    assert got.get(f"CPU_group_1_{pg_hex}") == 1
    old_spelling = ray.get(assigned.options(placement_group=pg, placement_group_bundle_index=0)
                           .remote(), timeout=10)
    assert old_spelling.get(f"CPU_group_0_{pg_hex}") == 1
    remove_placement_group(pg)


def test_removal_kills_the_actor_inside_and_fails_waiting_tasks(cluster):
    pg = placement_group([{"CPU": 1}])
    ray.get(pg.ready(), timeout=10)
    actor = Sleeper.options(scheduling_strategy=PlacementGroupSchedulingStrategy(pg, 0)).remote()
    assert ray.get(actor.ping.remote(), timeout=10) == "pong"
    # the bundle's only CPU is the actor's, so this one waits in the group
    waiting = assigned.options(scheduling_strategy=PlacementGroupSchedulingStrategy(pg)).remote()
    assert not ray.wait([waiting], timeout=0.3)[0]
    remove_placement_group(pg)
    with pytest.raises(RayActorError):
        ray.get(actor.ping.remote(), timeout=10)
    with pytest.raises(TaskPlacementGroupRemoved, match="was removed"):
        ray.get(waiting, timeout=10)
    assert _available_cpus(4)


def test_group_that_does_not_fit_stays_pending_until_resources_free(cluster):
    big = placement_group([{"CPU": 3}])
    ray.get(big.ready(), timeout=10)
    second = placement_group([{"CPU": 2}])
    assert not second.wait(0.5)
    assert placement_group_table(second)["state"] == "PENDING"
    remove_placement_group(big)
    assert second.wait(10)
    assert placement_group_table(second)["state"] == "CREATED"
    remove_placement_group(second)
    # never fits on this cluster: pending, not an error
    huge = placement_group([{"CPU": 64}])
    assert not huge.wait(0.3)
    # its bundle is what the autoscaler sees as demand
    from ray._private import runtime
    from ray._private.gcs import keys

    loads = runtime.current().gcs.hgetall_obj(keys.NODE_LOADS)
    assert any({"CPU": 64} in load["demand"] for load in loads.values())
    remove_placement_group(huge)
    assert _available_cpus(4)


def test_named_group_is_found_by_name_and_names_are_unique(cluster):
    pg = placement_group([{"CPU": 1}], name="trainers", lifetime="detached")
    assert get_placement_group("trainers") == pg
    assert placement_group_table(pg)["is_detached"]
    with pytest.raises(ValueError, match="already exists"):
        placement_group([{"CPU": 1}], name="trainers")
    remove_placement_group(pg)
    with pytest.raises(ValueError, match="no such live group"):
        get_placement_group("trainers")


def test_removing_a_group_twice_is_accepted_and_an_unknown_group_is_refused(cluster):
    from ray._private.runtime.placement_groups import PlacementGroup, PlacementGroupID

    pg = placement_group([{"CPU": 1}])
    remove_placement_group(pg)
    remove_placement_group(pg)  # already removed: nothing to do, no error
    never_created = PlacementGroup(PlacementGroupID(b"\x01" * 18), [{"CPU": 1}])
    with pytest.raises(ValueError, match=f"no placement group {'01' * 18}: it was never "
                                         "created in this cluster"):
        remove_placement_group(never_created)


def test_child_tasks_are_captured_and_see_their_group(cluster):
    pg = placement_group([{"CPU": 1}, {"CPU": 1}])
    ray.get(pg.ready(), timeout=10)

    @ray.remote
    def child():
        current = get_current_placement_group()
        return current.id.hex() if current else None, ray.get_runtime_context() \
            .get_assigned_resources()

    @ray.remote
    def parent():
        assert get_current_placement_group() == pg
        return ray.get(child.remote())

    strategy = PlacementGroupSchedulingStrategy(pg, 0, placement_group_capture_child_tasks=True)
    pg_hex, resources = ray.get(parent.options(scheduling_strategy=strategy).remote(), timeout=20)
    assert pg_hex == pg.id.hex() and resources.get(f"CPU_group_{pg_hex}") == 1
    assert get_current_placement_group() is None  # the driver is in no group
    remove_placement_group(pg)


def test_parent_blocked_on_its_child_lends_the_bundles_only_cpu(cluster):
    pg = placement_group([{"CPU": 1}])
    ray.get(pg.ready(), timeout=10)

    @ray.remote
    def leaf():
        return get_current_placement_group().id.hex()

    @ray.remote
    def parent():
        return ray.get(leaf.remote())  # needs the CPU this task holds while it waits

    strategy = PlacementGroupSchedulingStrategy(pg, 0, placement_group_capture_child_tasks=True)
    assert ray.get(parent.options(scheduling_strategy=strategy).remote(), timeout=20) == \
        pg.id.hex()
    remove_placement_group(pg)


def test_task_on_group_gpus_sees_the_bundles_gpu_ids(cluster):
    pg = placement_group([{"CPU": 1}, {"CPU": 1, "GPU": 1}])
    ray.get(pg.ready(), timeout=10)

    @ray.remote(num_gpus=1)
    def gpus():
        import os

        return ray.get_gpu_ids(), os.environ.get("CUDA_VISIBLE_DEVICES")

    ids, visible = ray.get(gpus.options(scheduling_strategy=PlacementGroupSchedulingStrategy(
        pg, 1)).remote(), timeout=10)
    assert len(ids) == 1 and visible == str(ids[0])
    with pytest.raises(ValueError, match="bundle 0"):
        gpus.options(scheduling_strategy=PlacementGroupSchedulingStrategy(pg, 0))
    remove_placement_group(pg)


def test_bad_requests_name_the_problem(cluster):
    with pytest.raises(ValueError, match="non-empty list"):
        placement_group([])
    with pytest.raises(ValueError, match="reserves no resources"):
        placement_group([{"CPU": 0}])
    with pytest.raises(ValueError, match="Unknown placement group strategy"):
        placement_group([{"CPU": 1}], strategy="TIGHT")
    with pytest.raises(ValueError, match="only works with strategy='STRICT_PACK'"):
        placement_group([{"CPU": 1}], _soft_target_node_id="ab" * 20)
    pg = placement_group([{"CPU": 1}])
    with pytest.raises(ValueError, match="out of range"):
        assigned.options(scheduling_strategy=PlacementGroupSchedulingStrategy(pg, 1))
    with pytest.raises(ValueError, match="cannot hold it"):
        assigned.options(num_cpus=2, placement_group=pg)
    remove_placement_group(pg)


def test_node_affinity_on_one_node(cluster):
    here = ray.get_runtime_context().get_node_id()

    @ray.remote
    def where():
        return ray.get_runtime_context().get_node_id()

    hard = NodeAffinitySchedulingStrategy(here, soft=False)
    assert ray.get(where.options(scheduling_strategy=hard).remote(), timeout=10) == here
    gone = NodeAffinitySchedulingStrategy("ff" * 20, soft=False)
    with pytest.raises(TaskUnschedulableError, match="unknown"):
        ray.get(where.options(scheduling_strategy=gone).remote(), timeout=10)
    soft = NodeAffinitySchedulingStrategy("ff" * 20, soft=True)
    assert ray.get(where.options(scheduling_strategy=soft).remote(), timeout=10) == here
    spread = ray.get([where.options(scheduling_strategy="SPREAD").remote() for _ in range(3)])
    assert spread == [here] * 3


@pytest.mark.parametrize("waiter", ["wait", "get_ready"])
def test_waiters_see_a_creation_published_while_the_state_channel_was_cut(
        cluster, deaf_subscriptions, waiter):
    """A change published while this process's pub/sub connection is down (a Redis
    restart, a cut connection) never arrives on the channel; once the connection is back
    the table is read again, so wait() and ray.get(ready()) still return, promptly. The
    group is created (it waits for a CPU another group holds) only after the waiter
    began, while the channel is cut."""
    import threading

    from ray._private import runtime
    from ray._private.runtime.placement_groups import CREATED, wait_state

    holder = placement_group([{"CPU": 1}])
    assert holder.wait(10)  # (the client subscribes at its first wait)
    pg = placement_group([{"CPU": 4}])
    gcs = runtime.current().gcs_client()

    released_at = []

    def create_while_deaf():
        time.sleep(0.5)  # the waiter below is waiting by now
        with deaf_subscriptions(gcs):
            remove_placement_group(holder)
            assert wait_state(pg, CREATED, 10)
        released_at.append(time.monotonic())

    creator = threading.Thread(target=create_while_deaf)
    creator.start()
    try:
        if waiter == "wait":
            assert pg.wait(15)
        else:
            assert ray.get(pg.ready(), timeout=15) == pg
        creator.join()
        assert released_at and time.monotonic() - released_at[0] < 3
    finally:
        creator.join()
        remove_placement_group(pg)
        assert _available_cpus(4)
