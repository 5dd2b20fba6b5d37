"""Tasks, objects, get/put/wait through the public API (the tutorial and API docs)."""

import os
import sys
import time

import numpy as np
import pytest

import ray


@pytest.fixture(autouse=True)
def _cluster(ray_module):
    yield


@ray.remote
def add(a, b):
    return a + b


@ray.remote(num_return_vals=3)
def three():
    return 1, 2, 3


@ray.remote
def square(x):
    return x * x


def test_documented_example_runs_in_parallel():
    @ray.remote
    def f():
        time.sleep(0.5)
        return 1

    ray.get([f.remote() for _ in range(2)])  # both workers started and leased
    start = time.time()
    assert ray.get([f.remote() for _ in range(2)]) == [1, 1]
    assert time.time() - start < 0.95


def test_args_by_value_and_by_ref_behave_the_same():
    assert ray.get(add.remote(1, 2)) == 3
    assert ray.get(add.remote(1, ray.put(2))) == 3
    assert ray.get(add.remote(add.remote(1, 1), b=ray.put(5))) == 7


def test_keyword_arguments():
    @ray.remote
    def kw(a, b=10, *, c=100):
        return a + b + c

    assert ray.get(kw.remote(1)) == 111
    assert ray.get(kw.remote(1, c=1, b=2)) == 4


def test_num_return_vals_and_num_returns_both_work():
    assert ray.get(three.remote()) == [1, 2, 3]

    @ray.remote(num_returns=2)
    def two():
        return "a", "b"

    a, b = two.remote()
    assert ray.get([a, b]) == ["a", "b"]
    x, y = add.options(num_returns=2).remote((1,), (2,))  # returns a tuple of length 2
    assert ray.get([x, y]) == [1, 2]


def test_remote_function_called_directly_raises():
    with pytest.raises(TypeError, match=r"\.remote"):
        add(1, 2)


def test_object_ref_identity():
    ref = ray.put(5)
    assert isinstance(ref, ray.ObjectID) and isinstance(ref, ray.ObjectRef)
    assert len(ref.binary()) == 20 and len(ref.hex()) == 40
    assert ref == ray.ObjectRef(ref.binary())
    assert len({ref, ray.ObjectRef(ref.binary())}) == 1
    assert repr(ref).startswith("ObjectRef(")


def test_numpy_round_trip_is_zero_copy_and_read_only():
    x = np.arange(10**6, dtype=np.float64)
    ref = ray.put(x)
    y = ray.get(ref)
    np.testing.assert_array_equal(x, y)
    assert not y.flags.writeable
    with pytest.raises(ValueError):
        y[0] = 1
    z = ray.get(ref)
    assert y.__array_interface__["data"][0] == z.__array_interface__["data"][0]


def test_small_numpy_values_come_back_64_byte_aligned_and_read_only():
    # Values small enough to travel inline (not through the store) included, as in Ray.
    @ray.remote
    def make(n):
        return np.ones(n)

    for n in (10, 1000, 6000):
        values = [ray.get(ray.put(np.ones(n))) for _ in range(8)]
        values += ray.get([make.remote(n) for _ in range(8)])
        for v in values:
            assert v.ctypes.data % 64 == 0
            assert not v.flags.writeable
            assert v.sum() == n


def test_large_arguments_and_results_go_through_the_store():
    @ray.remote
    def total(a):
        return float(a.sum()), np.ones(300_000)

    s, big = ray.get(total.options(num_returns=2).remote(np.ones(500_000)))
    assert s == 500_000.0 and big.shape == (300_000,)


def test_nested_refs_inside_arguments_and_results():
    @ray.remote
    def unwrap(refs):
        return sum(ray.get(refs))

    @ray.remote
    def make_refs():
        return [ray.put(i) for i in range(3)]

    refs = [ray.put(i) for i in range(5)]
    assert ray.get(unwrap.remote(refs)) == 10
    assert sum(ray.get(ray.get(make_refs.remote()))) == 3


def test_nested_tasks_do_not_deadlock_on_one_cpu_recursion():
    @ray.remote
    def fact(n):
        if n <= 1:
            return 1
        return n * ray.get(fact.remote(n - 1))

    assert ray.get(fact.remote(8)) == 40320


def test_a_task_waiting_for_a_quick_task_pushed_before_it_to_its_worker_gets_its_result():
    # Both go to one worker in one push; the quick task's result must reach the owner
    # even though the next task (which waits for it) has not finished.
    @ray.remote
    def quick(big):
        return bytes(200_000) if big else 0

    @ray.remote
    def wait_for(refs):
        return ray.get(refs[0])

    @ray.remote
    def wait_with_ray_wait(refs):
        ready, _ = ray.wait(refs, timeout=30)
        return len(ready)

    assert ray.get(quick.remote(False)) == 0  # (a warm worker: pushes go out in batches)
    for big in (False, True):
        for _ in range(30):
            got = ray.get(wait_for.remote([quick.remote(big)]), timeout=20)
            assert got == (bytes(200_000) if big else 0)
    for _ in range(30):
        assert ray.get(wait_with_ray_wait.remote([quick.remote(False)]), timeout=20) == 1


def test_get_timeout_raises_get_timeout_error():
    @ray.remote
    def slow():
        time.sleep(1)
        return "late"

    ref = slow.remote()
    with pytest.raises(ray.exceptions.GetTimeoutError) as info:
        ray.get(ref, timeout=0.2)
    assert isinstance(info.value, TimeoutError)
    assert ray.get(ref, timeout=10) == "late"


def test_wait_preserves_order_and_partitions():
    @ray.remote
    def sleep_then(t, v):
        time.sleep(t)
        return v

    refs = [sleep_then.remote(t, i) for i, t in enumerate([0.6, 0.0, 0.0, 0.6])]
    ready, rest = ray.wait(refs, num_returns=2, timeout=5)
    assert ready == [refs[1], refs[2]]
    assert rest == [refs[0], refs[3]]
    ready, rest = ray.wait(refs, num_returns=4, timeout=0.01)
    assert len(ready) + len(rest) == 4
    ready, rest = ray.wait(refs, num_returns=4)
    assert ready == refs and rest == []


def test_wait_rejects_duplicates_and_bad_num_returns():
    ref = ray.put(1)
    with pytest.raises(ValueError, match="duplicate"):
        ray.wait([ref, ref])
    with pytest.raises(ValueError):
        ray.wait([ref], num_returns=2)


def test_task_error_is_ray_task_error_and_original_class():
    @ray.remote
    def boom():
        raise ValueError("bad value 42")

    with pytest.raises(ValueError, match="bad value 42") as info:
        ray.get(boom.remote())
    assert isinstance(info.value, ray.exceptions.RayTaskError)
    assert "boom" in str(info.value)
    with pytest.raises(ray.exceptions.RayTaskError):
        ray.get(add.remote(boom.remote(), 1))  # errors propagate through dependencies


def test_errors_pickle():
    import pickle

    err = ray.exceptions.RayTaskError("f", "tb", ValueError("x")).as_instanceof_cause()
    again = pickle.loads(pickle.dumps(err))
    assert isinstance(again, ValueError) and isinstance(again, ray.exceptions.RayTaskError)
    for e in [ray.exceptions.GetTimeoutError("t"), ray.exceptions.WorkerCrashedError(),
              ray.exceptions.RayActorError(), ray.exceptions.ObjectLostError("ab", "gone")]:
        assert type(pickle.loads(pickle.dumps(e))) is type(e)


def test_worker_crash_gives_worker_crashed_error_after_retries():
    @ray.remote(max_retries=1)
    def die():
        os._exit(1)

    with pytest.raises(ray.exceptions.WorkerCrashedError):
        ray.get(die.remote(), timeout=30)


def test_max_retries_recovers_from_a_crash(tmp_path):
    marker = tmp_path / "crashed"

    @ray.remote(max_retries=2)
    def crash_once(path):
        if not os.path.exists(path):
            open(path, "w").close()
            os._exit(1)
        return "ok"

    assert ray.get(crash_once.remote(str(marker)), timeout=30) == "ok"


def test_max_calls_replaces_the_worker():
    @ray.remote(max_calls=1)
    def pid():
        return os.getpid()

    pids = {ray.get(pid.remote(), timeout=30) for _ in range(3)}
    assert len(pids) == 3


def test_redefining_a_function_uses_the_new_version():
    @ray.remote
    def g():
        return 1

    assert ray.get(g.remote()) == 1

    @ray.remote  # noqa: F811
    def g():
        return 2

    assert ray.get(g.remote()) == 2


def test_function_may_use_a_helper_defined_later():
    @ray.remote
    def uses_helper():
        return helper_defined_later()

    def helper_defined_later():
        return "helped"

    assert ray.get(uses_helper.remote()) == "helped"


def test_put_of_object_ref_is_rejected():
    with pytest.raises(TypeError):
        ray.put(ray.put(1))


def test_get_rejects_non_refs():
    with pytest.raises(TypeError):
        ray.get(1)
    with pytest.raises(TypeError):
        ray.get([ray.put(1), 2])


def test_self_referencing_and_shared_objects_round_trip():
    a = []
    a.append(a)
    b = ray.get(ray.put(a))
    assert b[0] is b
    shared = [1, 2]
    c = ray.get(ray.put({"x": shared, "y": shared}))
    assert c["x"] is c["y"]


def test_worker_output_is_streamed_to_the_driver(capfd):
    @ray.remote
    def talk():
        print("hello from a worker")
        return os.getpid()

    pid = ray.get(talk.remote())
    deadline = time.time() + 5
    seen = ""
    while time.time() < deadline and "hello from a worker" not in seen:
        time.sleep(0.1)
        seen += capfd.readouterr().out
    assert f"(ray::talk pid={pid}" in seen and "hello from a worker" in seen


def test_unflushed_output_without_newline_reaches_sys_stdout(capsys):
    # As Ray: pytest's capsys (which replaces sys.stdout/sys.stderr) sees what a task
    # printed, even without a newline or a flush.
    @ray.remote
    def talk():
        for i in range(10):
            print(i, end=" ")
            print(100 + i, end=" ", file=sys.stderr)

    ray.get(talk.remote())
    out = err = ""
    deadline = time.time() + 10
    while time.time() < deadline and not ("9" in out and "109" in err):
        time.sleep(0.2)
        o, e = capsys.readouterr()
        out, err = out + o, err + e
    assert all(str(i) in out for i in range(10)), out
    assert all(str(i) in err for i in range(100, 110)), err


def test_get_of_a_list_raises_the_first_error_without_waiting_for_the_rest():
    @ray.remote
    def fails():
        raise ValueError("boom")

    @ray.remote
    def hangs():
        time.sleep(3600)

    hanging = hangs.remote()
    start = time.time()
    with pytest.raises(ValueError, match="boom"):
        ray.get([hanging, fails.remote()])
    assert time.time() - start < 30
    ray.cancel(hanging, force=True)
    with pytest.raises((ray.exceptions.TaskCancelledError, ray.exceptions.WorkerCrashedError)):
        ray.get(hanging, timeout=60)


def test_cluster_resources_and_nodes():
    assert ray.cluster_resources()["CPU"] == 2
    nodes = ray.nodes()
    assert len(nodes) == 1 and nodes[0]["Alive"]
    assert nodes[0]["Resources"]["CPU"] == 2


def test_unknown_remote_option_suggests_the_right_name():
    # Ray raises ValueError("Invalid option keyword ..."); ours also names the closest one.
    with pytest.raises(ValueError, match="Invalid option keyword num_return .*Did you mean "
                                         "'num_returns'"):
        ray.remote(num_return=2)(lambda: 1)


def test_async_await_of_object_ref():
    import asyncio

    async def main():
        return await add.remote(20, 22)

    assert asyncio.run(main()) == 42


class _BothBases(RuntimeError, TimeoutError):
    pass


def test_errors_with_c_level_bases_keep_their_class():
    @ray.remote
    def raise_both():
        raise _BothBases("two bases")

    with pytest.raises(_BothBases) as info:
        ray.get(raise_both.remote())
    assert isinstance(info.value, ray.exceptions.RayTaskError)


def test_tasks_are_pushed_to_workers_outside_the_submitters_lock(monkeypatch):
    """No socket write under the task submitter's lock: a write drops the GIL, and the
    thread that then waits for the lock (the program submitting, or the I/O thread
    handing in results) would wait for the writer's GIL too (up to 5 ms each time)."""
    from ray._private import api, rpc

    submitter = api.connected_runtime().submitter
    pushes: list[bool] = []
    notify = rpc.RpcPeer.notify

    def watched(peer, method, *args):
        if method == "push_tasks":
            pushes.append(submitter.lock._is_owned())
        return notify(peer, method, *args)

    monkeypatch.setattr(rpc.RpcPeer, "notify", watched)
    assert ray.get([square.remote(i) for i in range(2000)]) == [i * i for i in range(2000)]
    assert pushes and not any(pushes), f"{sum(pushes)} of {len(pushes)} pushes under the lock"
