"""Generator tasks and methods (Ray 2.x): ``num_returns="streaming"`` (the default for
generators: an ``ObjectRefGenerator``), ``"dynamic"`` (a ``DynamicObjectRefGenerator``),
a fixed ``num_returns``, values in plasma, errors raised mid-stream, async methods, and
local mode."""

import numpy as np
import pytest

import ray
from ray._private.ref_generators import DynamicObjectRefGenerator, ObjectRefGenerator


@pytest.fixture(scope="module")
def cluster():
    info = ray.init(num_cpus=2, object_store_memory=256 * 1024**2, num_gpus=0)
    yield info
    ray.shutdown()


def _value(i, big):
    return np.ones(1_000_000, dtype=np.int8) * i if big else [i]


@ray.remote(max_retries=0)
def numbers(n, big=False):
    for i in range(n):
        yield _value(i, big)


@ray.remote
class Numbers:
    def gen(self, n, big=False):
        for i in range(n):
            yield _value(i, big)

    async def agen(self, n):
        for i in range(n):
            yield [i]

    def failing(self):
        yield [0]
        raise ValueError("after one")


@pytest.mark.parametrize("big", [False, True])
def test_streaming_is_the_default_for_generators(cluster, big):
    gen = numbers.remote(4, big)
    assert isinstance(gen, ObjectRefGenerator)
    assert ray.get(gen) is gen  # as Ray: ray.get hands the generator back
    assert [ray.get(ref)[0] for ref in gen] == [0, 1, 2, 3]
    with pytest.raises(StopIteration):
        next(gen)
    assert gen.is_finished()
    assert list(numbers.remote(0)) == []


@pytest.mark.parametrize("big", [False, True])
def test_dynamic_returns_one_ref_to_the_yielded_refs(cluster, big):
    ref = numbers.options(num_returns="dynamic").remote(3, big)
    refs = ray.get(ref)
    assert isinstance(refs, DynamicObjectRefGenerator) and len(refs) == 3
    assert [ray.get(r)[0] for r in refs] == [0, 1, 2]

    @ray.remote
    def read(gen):  # passed by ref (resolved in the task) or by value
        return [ray.get(r)[0] for r in gen]

    assert ray.get(read.remote(ref)) == [0, 1, 2]
    assert ray.get(read.remote(refs)) == [0, 1, 2]


def test_streaming_generators_cannot_leave_the_caller(cluster):
    @ray.remote
    def read(gen):
        return list(gen)

    with pytest.raises(TypeError, match="ObjectRefGenerator is not allowed"):
        read.remote(numbers.remote(2))


def test_fixed_num_returns_takes_the_first_values(cluster):
    assert ray.get(numbers.options(num_returns=3).remote(3)) == [[0], [1], [2]]
    assert ray.get(numbers.options(num_returns=2).remote(3)) == [[0], [1]]  # extra dropped
    assert ray.get(numbers.options(num_returns=1).remote(1)) == [0]
    with pytest.raises(ray.exceptions.RayTaskError) as info:
        ray.get(numbers.options(num_returns=3).remote(2))
    assert isinstance(info.value.as_instanceof_cause(), ValueError)


def test_error_raised_mid_stream_is_the_next_value(cluster):
    @ray.remote(max_retries=0)
    def f():
        yield 1
        yield Exception("yielded, not raised")
        raise KeyError("raised")

    gen = f.remote()
    assert ray.get(next(gen)) == 1
    assert str(ray.get(next(gen))) == "yielded, not raised"
    with pytest.raises(KeyError):
        ray.get(next(gen))
    with pytest.raises(StopIteration):
        next(gen)
    with pytest.raises(KeyError):
        ray.get(gen.completed())

    refs = list(ray.get(f.options(num_returns="dynamic").remote()))
    assert len(refs) == 3 and ray.get(refs[0]) == 1
    with pytest.raises(KeyError):
        ray.get(refs[2])
    a, b, c = f.options(num_returns=3).remote()
    assert ray.get(a) == 1
    with pytest.raises(KeyError):
        ray.get(c)


@pytest.mark.parametrize("big", [False, True])
def test_actor_generator_methods(cluster, big):
    actor = Numbers.remote()
    assert [ray.get(r)[0] for r in actor.gen.remote(3, big)] == [0, 1, 2]
    assert [ray.get(r) for r in actor.agen.remote(3)] == [[0], [1], [2]]
    refs = ray.get(actor.gen.options(num_returns="dynamic").remote(2, big))
    assert [ray.get(r)[0] for r in refs] == [0, 1]
    assert [x[0] for x in ray.get(actor.gen.options(num_returns=2).remote(2, big))] == [0, 1]
    # num_returns=None: the method's own (a generator streams)
    assert [ray.get(r)[0] for r in actor.gen.options(num_returns=None).remote(2, big)] == [0, 1]
    gen = actor.failing.remote()
    assert ray.get(next(gen)) == [0]
    with pytest.raises(ValueError, match="after one"):
        ray.get(next(gen))


def test_async_iteration_and_readiness(cluster):
    import asyncio

    gen = numbers.remote(3)

    async def consume():
        return [await ref async for ref in gen]

    assert asyncio.run(consume()) == [[0], [1], [2]]


def test_dropped_generator_frees_its_values(cluster):
    gen = numbers.remote(3, True)
    first = next(gen)
    assert ray.get(first)[0] == 0
    ray.get(gen.completed())
    del gen  # the values not taken are freed; the one taken stays while its ref lives
    assert ray.get(first)[0] == 0


def test_generators_in_local_mode():
    ray.shutdown()  # (the module's cluster: no later test uses it)
    ray.init(local_mode=True)
    try:
        assert [ray.get(r) for r in numbers.remote(3)] == [[0], [1], [2]]
        refs = ray.get(numbers.options(num_returns="dynamic").remote(2))
        assert [ray.get(r) for r in refs] == [[0], [1]]
    finally:
        ray.shutdown()


# -- the owner's stream bookkeeping, message by message (no cluster) --------------------
class _Store:
    """The one ObjectClient call GeneratorStreams makes, into a real MemoryStore."""

    def __init__(self):
        from ray._private.runtime.memory_store import MemoryStore

        self.memory = MemoryStore()

    def store_value(self, object_id, value):
        self.memory.put(object_id, value)


def _streams():
    from ray._private.runtime.generator_streams import GeneratorStreams
    from ray._private.runtime.reference_counter import ReferenceCounter

    store = _Store()
    return GeneratorStreams(store, ReferenceCounter(lambda *a: None)), store


def _item(task_id, index, value=b"v"):
    from ray._private.messages import GeneratorItem, Inline, ReturnObject, item_id

    return GeneratorItem(task_id, index,
                         ReturnObject(item_id(task_id, index), Inline(b"m", value))).to_wire()


def _error_return(task_id):
    from ray._private.messages import Inline, ReturnObject
    from ray._private.runtime import serialization as ser

    small = ser.serialize_error(ValueError("boom"))
    return ReturnObject(task_id + (1).to_bytes(4, "little"), Inline(small.metadata, small.data))


def test_stream_end_can_arrive_before_open_and_before_its_values():
    from ray._private.messages import NUM_RETURNS_STREAMING, item_id

    streams, store = _streams()
    task = b"t" * 16
    # The task's end (2 values, then an error) comes first, then its values, then open().
    streams.completed(task, NUM_RETURNS_STREAMING, [_error_return(task)], 2)
    streams.item_arrived(None, _item(task, 1))
    streams.item_arrived(None, _item(task, 0))
    streams.open(task)
    refs = [streams.next_item(task, i, timeout_s=1) for i in range(3)]
    assert [r.binary() for r in refs] == [item_id(task, i) for i in range(3)]
    assert store.memory.get(item_id(task, 2)).metadata == b"RAY_ERROR"
    with pytest.raises(StopIteration):
        streams.next_item(task, 3, timeout_s=1)


def test_stream_keeps_the_first_copy_of_a_retried_value_and_frees_after_release():
    from ray._private.messages import NUM_RETURNS_STREAMING, Inline, ReturnObject

    streams, _ = _streams()
    task = b"r" * 16
    streams.open(task)
    streams.item_arrived(None, _item(task, 0, b"first"))
    assert streams.next_item(task, 0, timeout_s=1) is not None
    streams.item_arrived(None, _item(task, 0, b"again"))  # a retried attempt resends it
    assert not streams.item_ready(task, 1)
    with pytest.raises(ray.exceptions.GetTimeoutError):
        streams.next_item(task, 1, timeout_s=0.05)
    streams.failed(task, Inline(b"RAY_ERROR", b"x"))  # e.g. its worker died for good
    assert streams.next_item(task, 1, timeout_s=1) is not None  # the error, after item 0
    with pytest.raises(StopIteration):
        streams.next_item(task, 2, timeout_s=1)
    streams.release(task)
    streams.item_arrived(None, _item(task, 5))  # late values of a released stream: dropped
    streams.completed(task, NUM_RETURNS_STREAMING,
                      [ReturnObject(task + (1).to_bytes(4, "little"), Inline(b"m", b""))], 6)
    with pytest.raises(StopIteration):
        streams.next_item(task, 0, timeout_s=1)
