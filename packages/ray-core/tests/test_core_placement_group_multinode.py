"""Placement groups and scheduling strategies over several real nodes (one process tree
per raylet, ray.cluster_utils.Cluster): STRICT_SPREAD / STRICT_PACK placement, tasks
following their bundles across nodes, SPREAD, NodeAffinity, and a group whose node
dies getting its bundle placed again."""

import time

import pytest

import ray
from ray.cluster_utils import Cluster
from ray.exceptions import TaskUnschedulableError
from ray.util.placement_group import (
    get_placement_group,
    placement_group,
    placement_group_table,
    remove_placement_group,
)
from ray.util.scheduling_strategies import (
    NodeAffinitySchedulingStrategy,
    PlacementGroupSchedulingStrategy,
)

pytestmark = pytest.mark.multinode

FAST = '{"heartbeat_timeout_s": 1.5, "heartbeat_period_s": 0.1}'


@pytest.fixture(scope="module")
def cluster():
    c = Cluster(_internal_config=FAST)
    c.add_node(num_cpus=2)
    c.add_node(num_cpus=2)
    c.add_node(num_cpus=2)
    ray.init(address=c.address)
    yield c
    ray.shutdown()
    c.shutdown()


@ray.remote(num_cpus=1)
def where(delay_s=0.0):
    time.sleep(delay_s)
    return ray.get_runtime_context().get_node_id()


def _in(pg, index):
    return where.options(scheduling_strategy=PlacementGroupSchedulingStrategy(pg, index))


def test_strict_spread_puts_bundles_on_distinct_nodes_and_tasks_follow(cluster):
    pg = placement_group([{"CPU": 1}] * 3, strategy="STRICT_SPREAD")
    assert pg.wait(10)
    nodes = placement_group_table(pg)["bundles_to_node_id"]
    assert len(set(nodes.values())) == 3
    assert ray.get([_in(pg, i).remote() for i in range(3)], timeout=30) == \
        [nodes[i] for i in range(3)]
    # a fourth distinct node does not exist: pending
    four = placement_group([{"CPU": 1}] * 4, strategy="STRICT_SPREAD")
    assert not four.wait(0.5)
    remove_placement_group(four)
    remove_placement_group(pg)


def test_strict_pack_puts_every_bundle_on_one_node(cluster):
    pg = placement_group([{"CPU": 1}, {"CPU": 1}], strategy="STRICT_PACK")
    assert pg.wait(10)
    nodes = placement_group_table(pg)["bundles_to_node_id"]
    assert nodes[0] == nodes[1]
    assert set(ray.get([_in(pg, 0).remote(), _in(pg, 1).remote()], timeout=30)) == {nodes[0]}
    remove_placement_group(pg)
    target = cluster.worker_nodes[-1].node_id
    hinted = placement_group([{"CPU": 1}], strategy="STRICT_PACK", _soft_target_node_id=target)
    assert hinted.wait(10)
    assert placement_group_table(hinted)["bundles_to_node_id"] == {0: target}
    remove_placement_group(hinted)


def test_spread_strategy_uses_several_nodes(cluster):
    # two 1-CPU tasks fit on the driver's node; SPREAD still sends them to two nodes
    refs = [where.options(scheduling_strategy="SPREAD").remote(0.5) for _ in range(2)]
    assert len(set(ray.get(refs, timeout=30))) == 2


@ray.remote(num_cpus=1)
class Where:
    def node(self):
        return ray.get_runtime_context().get_node_id()


def test_spread_actors_land_on_different_nodes(cluster):
    actors = [Where.options(scheduling_strategy="SPREAD").remote() for _ in range(2)]
    assert len(set(ray.get([a.node.remote() for a in actors], timeout=30))) == 2
    for actor in actors:
        ray.kill(actor)


def test_node_affinity_hard_and_soft(cluster):
    target = cluster.worker_nodes[-1].node_id
    hard = NodeAffinitySchedulingStrategy(target, soft=False)
    assert set(ray.get([where.options(scheduling_strategy=hard).remote() for _ in range(3)],
                       timeout=30)) == {target}
    actor = Where.options(scheduling_strategy=hard).remote()
    assert ray.get(actor.node.remote(), timeout=30) == target
    ray.kill(actor)


def test_a_task_on_another_node_creates_a_group_through_the_head(cluster):
    target = cluster.worker_nodes[0].node_id

    @ray.remote(num_cpus=0)
    def make_group():
        pg = placement_group([{"CPU": 1}], strategy="STRICT_PACK")
        ok = pg.wait(10)
        table = placement_group_table(pg)
        remove_placement_group(pg)
        return ok, table["state"]

    strategy = NodeAffinitySchedulingStrategy(target, soft=False)
    assert ray.get(make_group.options(scheduling_strategy=strategy).remote(), timeout=30) == \
        (True, "CREATED")


def test_a_finished_jobs_groups_are_removed_but_detached_ones_stay(cluster):
    import subprocess
    import sys

    script = (
        "import ray\n"
        "from ray.util.placement_group import placement_group\n"
        f"ray.init(address={cluster.address!r})\n"
        "mine = placement_group([{'CPU': 1}], name='job-scoped')\n"
        "kept = placement_group([{'CPU': 1}], name='kept', lifetime='detached')\n"
        "assert mine.wait(10) and kept.wait(10)\n"
        "print(mine.id.hex(), kept.id.hex(), flush=True)\n"
        "ray.shutdown()\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60, check=True).stdout.split()
    mine_hex, kept_hex = out[-2], out[-1]
    deadline = time.monotonic() + 10
    while placement_group_table()[mine_hex]["state"] != "REMOVED":
        assert time.monotonic() < deadline, placement_group_table()[mine_hex]
        time.sleep(0.1)
    assert placement_group_table()[kept_hex]["state"] == "CREATED"
    remove_placement_group(get_placement_group("kept"))
    # a driver killed without ray.shutdown(): its raylet marks the job over
    crash = script.replace("ray.shutdown()", "import os; os._exit(1)")
    out = subprocess.run([sys.executable, "-c", crash], capture_output=True, text=True,
                         timeout=60).stdout.split()
    crashed_hex = out[-2]
    deadline = time.monotonic() + 10
    while placement_group_table()[crashed_hex]["state"] != "REMOVED":
        assert time.monotonic() < deadline, placement_group_table()[crashed_hex]
        time.sleep(0.1)
    remove_placement_group(get_placement_group("kept"))


def test_group_on_a_dead_node_is_placed_again_and_hard_affinity_to_it_fails(cluster):
    doomed = cluster.add_node(num_cpus=1, resources={"spot": 1})
    pg = placement_group([{"CPU": 1, "spot": 1}])
    assert pg.wait(10)
    assert placement_group_table(pg)["bundles_to_node_id"][0] == doomed.node_id
    cluster.remove_node(doomed)
    deadline = time.monotonic() + 15
    while placement_group_table(pg)["state"] == "CREATED" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert placement_group_table(pg)["state"] == "RESCHEDULING"
    hard = NodeAffinitySchedulingStrategy(doomed.node_id, soft=False)
    with pytest.raises(TaskUnschedulableError, match="dead"):
        ray.get(where.options(scheduling_strategy=hard).remote(), timeout=10)
    soft = NodeAffinitySchedulingStrategy(doomed.node_id, soft=True)
    assert ray.get(where.options(scheduling_strategy=soft).remote(), timeout=10)
    replacement = cluster.add_node(num_cpus=1, resources={"spot": 1})
    assert pg.wait(15)
    assert placement_group_table(pg)["bundles_to_node_id"][0] == replacement.node_id
    assert ray.get(_in(pg, 0).remote(), timeout=30) == replacement.node_id
    remove_placement_group(pg)
    cluster.remove_node(replacement)
