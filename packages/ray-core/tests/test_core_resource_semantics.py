"""Resources as Ray defines them, on a machine without GPUs: fake GPUs and their ids,
``CUDA_VISIBLE_DEVICES`` preset by the user, workers kept apart by GPU use, actors'
GPUs, ``max_calls`` giving resources back, a task reading objects already in the store
keeping its CPU, the ``memory`` and ``object_store_memory`` resources, resources that
drop out of ``available_resources()`` at zero."""

from __future__ import annotations

import os
import time

import pytest

import ray


@pytest.fixture
def gpus10():
    ray.init(num_cpus=10, num_gpus=10)
    yield
    ray.shutdown()


def _ids_and_env(n: int):
    ids = ray.get_gpu_ids()
    assert len(ids) == n
    assert os.environ["CUDA_VISIBLE_DEVICES"] == ",".join(str(i) for i in ids)
    return ids


def test_fake_gpus_get_distinct_ids_and_cuda_visible_devices(gpus10):
    one = ray.remote(num_gpus=1)(lambda: _ids_and_env(1))
    none = ray.remote(num_gpus=0)(lambda: _ids_and_env(0))
    four = ray.remote(num_gpus=4)(lambda: (time.sleep(0.3), _ids_and_env(4))[1])
    assert ray.get([none.remote() for _ in range(3)]) == [[], [], []]
    held = ray.get([four.remote(), four.remote(), one.remote(), one.remote()])
    flat = [i for ids in held for i in ids]
    assert sorted(flat) == list(range(10))  # held at the same time: all different

    @ray.remote(num_gpus=2)
    class GPUActor:
        def __init__(self):
            self.at_start = _ids_and_env(2)

        def ids(self):
            return self.at_start, _ids_and_env(2)

    at_start, now = ray.get(GPUActor.remote().ids.remote())
    assert at_start == now and all(0 <= i < 10 for i in now)
    assert ray.get_gpu_ids() == []  # the driver holds none


def test_preset_cuda_visible_devices_name_the_gpus_handed_out():
    before = os.environ.get("CUDA_VISIBLE_DEVICES")
    os.environ["CUDA_VISIBLE_DEVICES"] = "4,5,6"
    try:
        ray.init(num_gpus=3, num_cpus=3)
        one = ray.remote(num_gpus=1)(lambda: _ids_and_env(1))
        two = ray.remote(num_gpus=2)(lambda: _ids_and_env(2))
        assert {i for ids in ray.get([one.remote() for _ in range(6)]) for i in ids} <= {4, 5, 6}
        for ids in ray.get([two.remote() for _ in range(3)]):
            assert set(ids) <= {4, 5, 6} and len(set(ids)) == 2
        assert ray.get(ray.remote(num_gpus=1)(lambda: ray.get_gpu_ids(as_str=True)).remote()
                       )[0] in ("4", "5", "6")
    finally:
        ray.shutdown()
        if before is None:
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = before


def test_gpu_and_cpu_work_do_not_share_workers_and_max_calls_frees_resources():
    ray.init(num_cpus=2, num_gpus=1)
    try:
        @ray.remote
        def cpu():
            return os.getpid()

        @ray.remote(num_gpus=1)
        def gpu():
            return os.getpid()

        cpu_pids = set(ray.get([cpu.remote() for _ in range(4)]))
        gpu_pids = set(ray.get([gpu.remote() for _ in range(4)]))
        assert not cpu_pids & gpu_pids

        @ray.remote(num_cpus=0)
        def child():
            return 0

        @ray.remote(num_cpus=1, num_gpus=1, max_calls=1, max_retries=0)
        def once():
            return os.getpid(), [child.remote()]

        # Each call's worker exits after it; the GPU comes back for the next one (it
        # would hang otherwise), and no call fails as if its worker had crashed.
        pids = [ray.get(once.remote(), timeout=60)[0] for _ in range(5)]
        assert len(set(pids)) == 5
    finally:
        ray.shutdown()


def test_task_reading_objects_already_in_the_store_keeps_its_cpu():
    ray.init(num_cpus=2)
    try:
        refs = [ray.put(bytearray(1024 * 1024)) for _ in range(10)]

        @ray.remote
        def consume(refs):
            ray.get(refs)
            return os.getpid()

        pids = set(ray.get([consume.remote(refs) for _ in range(10)]))
        assert len(pids) <= 2, pids  # no CPU was lent, so no extra worker started
    finally:
        ray.shutdown()


def test_memory_resources_and_zero_capacity_deletion():
    ray.init(num_cpus=2, num_gpus=1, resources={"custom": 1})
    try:
        total = ray.cluster_resources()
        assert total["object_store_memory"] > 0 and total["memory"] > 0

        @ray.remote(num_cpus=2, num_gpus=1, memory=100 * 2**20, resources={"custom": 1})
        def hold_everything():
            for _ in range(50):
                left = ray.available_resources()
                left.pop("object_store_memory")
                reserved = total["memory"] - left.pop("memory")
                if not left:
                    return left, reserved
                time.sleep(0.1)
            return left, None

        left, reserved = ray.get(hold_everything.remote())
        assert left == {}  # resources at zero are not listed
        assert reserved == 100 * 2**20
    finally:
        ray.shutdown()


def test_blocked_actor_keeps_its_resources_while_a_blocked_task_lends_its_cpu():
    ray.init(num_cpus=1)
    try:
        @ray.remote
        def leaf():
            return 1

        @ray.remote
        def parent():
            return ray.get(leaf.remote())  # the task lends its CPU while it waits

        @ray.remote(num_cpus=1)
        class Holder:
            def wait_for_leaf(self):
                return ray.get(leaf.remote())

        assert ray.get(parent.remote(), timeout=60) == 1
        holder = Holder.remote()
        call = holder.wait_for_leaf.remote()
        # As Ray: an actor's lifetime CPU is not lent while it blocks, so the leaf
        # task cannot run on this one-CPU node.
        ready, _ = ray.wait([call], timeout=1.5)
        assert ready == []
        ray.kill(holder)
        assert ray.get(leaf.remote(), timeout=60) == 1  # the CPU came back with the kill
    finally:
        ray.shutdown()


def test_available_resources_shows_this_nodes_current_use_at_once():
    # Not the last heartbeat's: a task that holds everything sees nothing free on its
    # first look, and the driver sees it all free again as soon as the task is over.
    ray.init(num_cpus=2, num_gpus=1, resources={"custom": 1})
    try:
        @ray.remote(num_cpus=2, num_gpus=1, resources={"custom": 1})
        def holds_everything():
            free = ray.available_resources()
            return {k: v for k, v in free.items() if k not in ("memory", "object_store_memory")}

        for _ in range(4):
            deadline = time.time() + 5  # (the driver hands its idle lease back)
            while ray.available_resources().get("CPU") != 2 and time.time() < deadline:
                time.sleep(0.05)
            free = ray.available_resources()
            assert (free["CPU"], free["GPU"], free["custom"]) == (2, 1, 1)
            # A new lease, served by the warm worker within milliseconds.
            assert ray.get(holds_everything.remote()) == {}
    finally:
        ray.shutdown()
