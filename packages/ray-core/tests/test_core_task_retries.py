"""Retries of calls that raise (Ray 2.x ``retry_exceptions``): tasks share the budget with
worker crashes (``max_retries``); actor methods take it from ``@ray.method`` or a call's
``.options()`` with the actor's ``max_task_retries`` (or the method's own) as the budget.
Cancelled tasks are never retried."""

import time

import pytest

import ray


class Flaky(Exception):
    pass


class Other(Exception):
    pass


@pytest.fixture(scope="module")
def cluster():
    info = ray.init(num_cpus=2, object_store_memory=128 * 1024**2, num_gpus=0)
    yield info
    ray.shutdown()


@ray.remote(num_cpus=0)
class Counter:
    def __init__(self):
        self.n = 0

    def inc(self):
        self.n += 1
        return self.n

    def get(self):
        return self.n


@ray.remote
def fails_until(counter, successes_after, error=Flaky):
    if ray.get(counter.inc.remote()) <= successes_after:
        raise error("not yet")
    return "done"


def test_task_retry_exceptions_true_list_and_budget(cluster):
    counter = Counter.remote()
    assert ray.get(fails_until.options(retry_exceptions=True, max_retries=2)
                   .remote(counter, 2)) == "done"
    assert ray.get(counter.get.remote()) == 3

    counter = Counter.remote()  # only the listed exceptions are retried
    with pytest.raises(Other):
        ray.get(fails_until.options(retry_exceptions=[Flaky], max_retries=3)
                .remote(counter, 1, Other))
    assert ray.get(counter.get.remote()) == 1

    counter = Counter.remote()  # the budget runs out: the last error is the result
    with pytest.raises(Flaky):
        ray.get(fails_until.options(retry_exceptions=[Flaky], max_retries=1)
                .remote(counter, 5))
    assert ray.get(counter.get.remote()) == 2

    counter = Counter.remote()  # without retry_exceptions an error is final
    with pytest.raises(Flaky):
        ray.get(fails_until.remote(counter, 1))
    assert ray.get(counter.get.remote()) == 1


def test_cancelled_tasks_are_not_retried(cluster):
    counter = Counter.remote()

    @ray.remote(retry_exceptions=True, max_retries=-1)
    def slow(counter):
        ray.get(counter.inc.remote())
        time.sleep(60)

    ref = slow.remote(counter)
    deadline = time.time() + 30
    while ray.get(counter.get.remote()) == 0 and time.time() < deadline:
        time.sleep(0.05)
    ray.cancel(ref)
    with pytest.raises(ray.exceptions.TaskCancelledError):
        ray.get(ref, timeout=60)
    assert ray.get(counter.get.remote()) == 1


@ray.remote(max_task_retries=0)
class Service:
    def __init__(self, counter):
        self.counter = counter

    @ray.method(retry_exceptions=[Flaky], max_task_retries=3)
    def decorated(self, successes_after):
        if ray.get(self.counter.inc.remote()) <= successes_after:
            raise Flaky("not yet")
        return "ok"

    def plain(self, successes_after):
        if ray.get(self.counter.inc.remote()) <= successes_after:
            raise Flaky("not yet")
        return "ok"


def test_actor_method_retry_exceptions_from_decorator_options_and_named_handles(cluster):
    counter = Counter.remote()
    service = Service.options(name="retrying-service").remote(counter)
    assert ray.get(service.decorated.remote(2)) == "ok"
    assert ray.get(counter.get.remote()) == 3

    with pytest.raises(Flaky):  # the actor's max_task_retries=0 and no retry_exceptions
        ray.get(service.plain.remote(ray.get(counter.get.remote()) + 1))
    start = ray.get(counter.get.remote())
    retried = service.plain.options(retry_exceptions=True, max_task_retries=2)
    assert ray.get(retried.remote(start + 2)) == "ok"
    assert ray.get(counter.get.remote()) == start + 3

    # A handle from ray.get_actor (the method table from the GCS) keeps the decorator's.
    same = ray.get_actor("retrying-service")
    start = ray.get(counter.get.remote())
    assert ray.get(same.decorated.remote(start + 1)) == "ok"
    with pytest.raises(ValueError, match="retry_exceptions must be either a boolean"):
        service.plain.options(retry_exceptions=["not an exception"])
    with pytest.raises(TypeError, match="max_task_retries"):
        ray.method(max_task_retries=1.5)
