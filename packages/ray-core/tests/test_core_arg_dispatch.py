"""A task is pushed to its worker only once its arguments are on the worker's node.

Ray's raylet dispatches a task after its dependency manager made the task's arguments
local, so a worker never sits on its CPU while an argument crosses the network. Here the
owner asks the raylet of the leased worker's node to pull the arguments it knows are
stored elsewhere, pushes the task when they arrived, and meanwhile pushes ready tasks
to the same worker; the worker reads the arguments from its node's store directly.
"""

import time

import numpy as np
import pytest

import ray
from ray.cluster_utils import Cluster


@pytest.fixture
def two_nodes():
    c = Cluster()
    c.add_node(num_cpus=0)
    ray.init(address=c.address)
    c.add_node(num_cpus=1, resources={"maker": 1})
    c.add_node(num_cpus=1, resources={"user": 1})
    c.wait_for_nodes()
    yield c
    ray.shutdown()
    c.shutdown()


def test_ready_tasks_run_while_another_tasks_arguments_move(two_nodes):
    size = 150_000_000

    @ray.remote(resources={"maker": 1})
    def make():
        return np.ones(size, dtype=np.uint8)

    @ray.remote(resources={"user": 1})
    def consume(arr):
        return time.time(), int(arr[:1000].sum()), len(arr)

    @ray.remote(resources={"user": 1})
    def quick(i):
        return time.time(), i

    big = make.remote()
    ray.wait([big], timeout=60)  # stored on the maker's node
    ray.get(quick.remote(-1), timeout=60)  # the user node's lease is up
    consumed = consume.remote(big)
    quick_refs = [quick.remote(i) for i in range(3)]
    started, total, length = ray.get(consumed, timeout=120)
    assert (total, length) == (1000, size)
    quick_times = [t for t, _ in ray.get(quick_refs, timeout=60)]
    # The quick tasks were pushed while the array moved, so they ran first.
    assert max(quick_times) < started


def test_arguments_from_several_nodes_reach_a_pinned_task(two_nodes):
    @ray.remote(resources={"maker": 1})
    def make(value):
        return np.full(2_000_000, value, dtype=np.int64)

    @ray.remote(resources={"user": 1})
    def total(*arrays):
        return [int(a if isinstance(a, int) else a[0]) for a in arrays], \
            ray.get_runtime_context().get_node_id()

    here = ray.put(np.full(2_000_000, 7, dtype=np.int64))  # on the driver's node
    made = [make.remote(i) for i in range(3)]
    small = ray.put(5)
    results = ray.get([total.remote(here, *made, small) for _ in range(4)], timeout=120)
    for values, _ in results:
        assert values[:4] == [7, 0, 1, 2]
        assert values[4] == 5
