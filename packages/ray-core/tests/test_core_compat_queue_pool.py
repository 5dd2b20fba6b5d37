"""ray.util.queue.Queue and ray.util.ActorPool through the public API, on one cluster."""

import asyncio
import time

import pytest

import ray
from ray.util import ActorPool
from ray.util.queue import Empty, Full, Queue


@pytest.fixture(scope="module", autouse=True)
def cluster(ray_module):
    yield


# -- Queue -----------------------------------------------------------------------------
def test_queue_is_fifo_and_reports_its_size():
    q = Queue()
    assert q.empty() and not q.full() and q.qsize() == 0 and len(q) == 0
    for i in range(5):
        q.put(i)
    assert q.size() == 5 and not q.empty()
    assert [q.get() for _ in range(5)] == list(range(5))
    q.shutdown()


def test_bounded_queue_nowait_raises_full_and_empty():
    q = Queue(maxsize=2)
    q.put_nowait("a")
    q.put("b", block=False)
    assert q.full()
    with pytest.raises(Full):
        q.put_nowait("c")
    with pytest.raises(Full):
        q.put("c", timeout=0.2)
    assert q.get_nowait() == "a" and q.get(block=False) == "b"
    with pytest.raises(Empty):
        q.get_nowait()
    t0 = time.monotonic()
    with pytest.raises(Empty):
        q.get(timeout=0.3)
    assert time.monotonic() - t0 >= 0.25
    q.shutdown()


def test_queue_batches_are_all_or_nothing():
    q = Queue(maxsize=3)
    q.put_nowait_batch([1, 2])
    with pytest.raises(Full, match="Cannot add 2 items"):
        q.put_nowait_batch([3, 4])
    assert q.qsize() == 2
    with pytest.raises(Empty, match="Cannot get 3 items"):
        q.get_nowait_batch(3)
    assert q.get_nowait_batch(2) == [1, 2]
    with pytest.raises(TypeError):
        q.put_nowait_batch(5)
    with pytest.raises(TypeError):
        q.get_nowait_batch("2")
    with pytest.raises(ValueError):
        q.get_nowait_batch(-1)
    q.shutdown()


def test_queue_rejects_bad_arguments():
    with pytest.raises(ValueError, match="maxsize"):
        Queue(maxsize=-1)
    with pytest.raises(TypeError, match="actor_options"):
        Queue(actor_options=[("num_cpus", 1)])
    q = Queue()
    with pytest.raises(ValueError, match="non-negative"):
        q.put(1, timeout=-1)
    with pytest.raises(ValueError, match="non-negative"):
        q.get(timeout=-1)
    q.shutdown()


def test_blocked_get_is_woken_by_a_put_from_a_task():
    q = Queue()

    @ray.remote
    def producer(queue, items):
        time.sleep(0.3)
        for item in items:
            queue.put(item)
        return "sent"

    done = producer.remote(q, ["x", "y"])
    assert q.get(timeout=30) == "x"  # blocks until the task's put
    assert q.get(timeout=30) == "y"
    assert ray.get(done) == "sent"
    q.shutdown()


def test_blocked_put_is_woken_by_a_get_from_an_actor():
    q = Queue(maxsize=1)
    q.put("first")

    @ray.remote
    class Consumer:
        def take(self, queue):
            time.sleep(0.3)
            return queue.get()

    consumer = Consumer.remote()
    taken = consumer.take.remote(q)
    q.put("second", timeout=30)  # blocks until the actor takes "first"
    assert ray.get(taken) == "first"
    assert q.get_nowait() == "second"
    q.shutdown()


def test_queue_async_put_and_get():
    q = Queue(maxsize=1)

    async def main():
        await q.put_async(1)
        with pytest.raises(Full):
            await q.put_async(2, block=False)
        with pytest.raises(Full):
            await q.put_async(2, timeout=0.1)
        first = await q.get_async()
        with pytest.raises(Empty):
            await q.get_async(block=False)
        with pytest.raises(Empty):
            await q.get_async(timeout=0.1)
        waiter = asyncio.ensure_future(q.get_async(timeout=30))
        await asyncio.sleep(0.2)
        await q.put_async(3)
        return first, await waiter

    assert asyncio.run(main()) == (1, 3)
    q.shutdown()


def test_queue_actor_options_and_shutdown_release_the_actor():
    q = Queue(actor_options={"num_cpus": 1})
    q.put(1)
    time.sleep(0.5)
    assert ray.available_resources().get("CPU", 0) <= 1
    q.shutdown()
    with pytest.raises(RuntimeError, match="shut down"):
        q.put(2)
    q.shutdown()  # twice is fine
    deadline = time.monotonic() + 30
    while ray.available_resources().get("CPU", 0) < 2:
        assert time.monotonic() < deadline, "the queue actor's CPU was not released"
        time.sleep(0.1)
    forced = Queue()
    forced.put(1)
    forced.shutdown(force=True)


# -- ActorPool --------------------------------------------------------------------------
@ray.remote
class Doubler:
    def double(self, x):
        return 2 * x

    def slow_double(self, x, delay):
        time.sleep(delay)
        return 2 * x

    @ray.method(num_returns=2)
    def pair(self, x):
        return x, -x


@pytest.fixture(scope="module")
def doublers():
    actors = [Doubler.remote() for _ in range(2)]
    ray.get([a.double.remote(0) for a in actors])
    return actors


def test_pool_map_keeps_input_order(doublers):
    pool = ActorPool(doublers)
    assert list(pool.map(lambda a, v: a.double.remote(v), range(6))) == [0, 2, 4, 6, 8, 10]


def test_pool_map_unordered_returns_every_result(doublers):
    pool = ActorPool(doublers)
    out = list(pool.map_unordered(lambda a, v: a.slow_double.remote(v, 0.3 if v == 0 else 0),
                                  range(5)))
    assert sorted(out) == [0, 2, 4, 6, 8]
    assert out[0] != 0  # the slow first value did not hold the others back


def test_pool_map_submits_eagerly(doublers):
    pool = ActorPool(doublers)
    submitted = []

    def fn(actor, v):
        submitted.append(v)
        return actor.double.remote(v)

    results = pool.map(fn, [1, 2, 3])
    assert submitted == [1, 2]  # two actors busy, the third value waits in the pool
    assert not pool.has_free()
    assert list(results) == [2, 4, 6]
    assert submitted == [1, 2, 3]


def test_pool_map_drops_uncollected_submissions(doublers):
    pool = ActorPool(doublers)
    pool.submit(lambda a, v: a.slow_double.remote(v, 1.0), 100)
    t0 = time.monotonic()
    assert list(pool.map(lambda a, v: a.double.remote(v), [1, 2, 3])) == [2, 4, 6]
    assert time.monotonic() - t0 < 5


def test_pool_submit_get_next_and_unordered(doublers):
    pool = ActorPool(doublers)
    for i in range(4):
        pool.submit(lambda a, v: a.double.remote(v), i)
    assert pool.has_next()
    assert [pool.get_next() for _ in range(4)] == [0, 2, 4, 6]
    assert not pool.has_next()
    with pytest.raises(StopIteration):
        pool.get_next()
    for i in range(3):
        pool.submit(lambda a, v: a.double.remote(v), i)
    got = {pool.get_next_unordered() for _ in range(3)}
    assert got == {0, 2, 4}
    with pytest.raises(StopIteration):
        pool.get_next_unordered()


def test_pool_get_next_after_get_next_unordered_took_a_later_result_is_an_error(doublers):
    pool = ActorPool(doublers)
    pool.submit(lambda a, v: a.slow_double.remote(v, 0.5), 1)
    pool.submit(lambda a, v: a.double.remote(v), 2)
    assert pool.get_next_unordered() == 4  # the second result, taken out of order
    with pytest.raises(ValueError, match="get_next_unordered"):
        pool.get_next()
    assert pool.get_next_unordered() == 2


def test_pool_timeouts(doublers):
    pool = ActorPool(doublers)
    pool.submit(lambda a, v: a.slow_double.remote(v, 1.0), 1)
    with pytest.raises(TimeoutError):
        pool.get_next(timeout=0.1)
    with pytest.raises(TimeoutError):
        pool.get_next_unordered(timeout=0.1)
    assert pool.has_next()
    assert pool.get_next(timeout=30) == 2
    pool.submit(lambda a, v: a.slow_double.remote(v, 1.0), 1)
    with pytest.raises(TimeoutError, match="ignored"):
        pool.get_next(timeout=0.05, ignore_if_timedout=True)
    assert not pool.has_next() and pool.has_free()  # the call was dropped


def test_pool_multiple_returns(doublers):
    pool = ActorPool(doublers)
    for i in range(4):
        pool.submit(lambda a, v: a.pair.remote(v), i)
    assert [pool.get_next(timeout=30) for _ in range(2)] == [[0, 0], [1, -1]]
    rest = sorted(tuple(pool.get_next_unordered(timeout=30)) for _ in range(2))
    assert rest == [(2, -2), (3, -3)]


def test_pool_pop_idle_and_push(doublers):
    a1, a2 = doublers
    pool = ActorPool([a1])
    pool.submit(lambda a, v: a.double.remote(v), 1)
    assert pool.pop_idle() is None and pool.has_free() is False
    with pytest.raises(ValueError, match="already belongs"):
        pool.push(a1)
    pool.push(a2)
    assert pool.has_free()
    pool.submit(lambda a, v: a.double.remote(v), 2)
    pool.submit(lambda a, v: a.double.remote(v), 3)  # waits: both actors busy
    assert not pool.has_free() and len(pool._pending_submits) == 1
    assert pool.get_next() == 2  # frees an actor, which takes the waiting value
    assert len(pool._pending_submits) == 0
    assert pool.get_next() == 4 and pool.get_next() == 6
    assert pool.has_free()
    popped = {pool.pop_idle(), pool.pop_idle()}
    assert popped == {a1, a2} and pool.pop_idle() is None and not pool.has_free()
