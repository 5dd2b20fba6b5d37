"""Signal/async APIs, timeline and profiling, runtime context, local mode, init options."""

import asyncio
import json
import os
import time

import pytest

import ray
import ray.experimental.signal as signal
from ray.experimental import async_api


@pytest.fixture
def cluster(ray_start):
    ray_start()
    yield


def test_signals_from_tasks_and_error_signals(cluster):
    class Progress(signal.Signal):
        def __init__(self, step):
            self.step = step

    @ray.remote
    def work():
        for i in range(3):
            signal.send(Progress(i))
        return "done"

    @ray.remote
    def fail():
        raise ValueError("nope")

    ref = work.remote()
    ray.get(ref)
    got = signal.receive([ref], timeout=5)
    assert [s.step for _, s in got] == [0, 1, 2]
    assert signal.receive([ref], timeout=0.1) == []  # cursor advanced
    signal.reset()
    assert len(signal.receive([ref], timeout=5)) == 3
    bad = fail.remote()
    errors = signal.receive([bad], timeout=10)
    assert isinstance(errors[0][1], signal.ErrorSignal)
    assert isinstance(errors[0][1].get_error(), ValueError)


def test_signals_from_actors(cluster):
    @ray.remote
    class Emitter:
        def emit(self, n):
            for _ in range(n):
                signal.send(signal.Signal())

    e = Emitter.remote()
    ray.get(e.emit.remote(2))
    assert len(signal.receive([e], timeout=5)) == 2


def test_async_api_as_future(cluster):
    @ray.remote
    def f(x):
        return x + 1

    async def main():
        return await asyncio.gather(*[async_api.as_future(f.remote(i)) for i in range(3)])

    assert asyncio.run(main()) == [1, 2, 3]


def test_timeline_has_task_spans_and_custom_profile_events(cluster, tmp_path):
    @ray.remote
    def traced():
        with ray.profile("custom event", extra_data={"key": "value"}):
            time.sleep(0.01)

    ray.get([traced.remote() for _ in range(3)])
    deadline = time.time() + 10
    events = []
    while time.time() < deadline:
        events = ray.timeline()
        if sum(e["name"] == "custom event" for e in events) >= 3:
            break
        time.sleep(0.2)
    names = [e["name"] for e in events]
    assert names.count("custom event") >= 3
    assert any("traced" in n for n in names)
    custom = next(e for e in events if e["name"] == "custom event")
    assert custom["args"]["key"] == "value" and custom["ph"] == "X"
    path = tmp_path / "timeline.json"
    ray.timeline(filename=str(path))
    assert json.loads(path.read_text())


def test_runtime_context(cluster):
    @ray.remote
    def ctx():
        c = ray.get_runtime_context()
        return c.get_node_id(), c.get_task_id()

    node_id, task_id = ray.get(ctx.remote())
    assert node_id == ray.nodes()[0]["NodeID"]
    assert task_id is not None


def test_errors_are_pushed_to_the_driver(cluster):
    @ray.remote
    def boom():
        raise RuntimeError("pushed")

    with pytest.raises(RuntimeError):
        ray.get(boom.remote())
    deadline = time.time() + 5
    while time.time() < deadline and not ray.errors():
        time.sleep(0.05)
    assert any("pushed" in e.get("message", "") for e in ray.errors())


def test_init_rejects_unknown_keywords_with_suggestion():
    with pytest.raises(TypeError, match="num_cpus"):
        ray.init(num_cpu=2)


def test_init_twice_raises_unless_ignored(ray_start):
    ray_start()
    with pytest.raises(RuntimeError, match="ignore_reinit_error"):
        ray.init()
    ray.init(ignore_reinit_error=True)
    assert ray.is_initialized()


def test_session_directory_layout(ray_start, tmp_path):
    info = ray_start(temp_dir=str(tmp_path))
    session = info["session_dir"]
    assert os.path.basename(session).startswith("session_")
    assert os.path.isdir(os.path.join(session, "logs"))
    assert os.path.isdir(os.path.join(session, "sockets"))
    assert os.path.realpath(tmp_path / "session_latest") == os.path.realpath(session)


def test_resources_gpus_and_custom_and_fractional(ray_start):
    ray_start(num_cpus=2, num_gpus=2, resources={"Custom": 1})
    resources = ray.cluster_resources()
    assert resources.pop("memory") > 0  # the node's default "memory" resource (as in Ray)
    assert resources.pop("object_store_memory") > 0  # listed as a resource, as in Ray
    assert resources == {"CPU": 2, "GPU": 2, "Custom": 1}

    @ray.remote(num_gpus=1)
    def gpu_task():
        return ray.get_gpu_ids(), os.environ["CUDA_VISIBLE_DEVICES"]

    @ray.remote(num_gpus=0.5)
    def half():
        return ray.get_gpu_ids()

    ids, visible = ray.get(gpu_task.remote())
    assert len(ids) == 1 and visible == str(ids[0])
    halves = ray.get([half.remote() for _ in range(2)])
    assert all(len(h) == 1 for h in halves)

    @ray.remote(resources={"Custom": 1})
    def custom():
        return ray.get_resource_ids()

    assert ray.get(custom.remote())["Custom"] == [(0, 1)]

    @ray.remote(num_gpus=1)
    class GPUActor:
        def ids(self):
            return ray.get_gpu_ids(), os.environ["CUDA_VISIBLE_DEVICES"]

    actors = [GPUActor.remote() for _ in range(2)]
    got = ray.get([a.ids.remote() for a in actors])
    assert sorted(i[0][0] for i in got) == [0, 1]


def test_infeasible_task_warns_instead_of_hanging_silently(ray_start, capfd):
    ray_start(num_cpus=1)

    @ray.remote(num_cpus=8)
    def too_big():
        return 1

    ref = too_big.remote()
    ready, _ = ray.wait([ref], timeout=1.0)
    assert ready == []
    deadline = time.time() + 5
    err = ""
    while time.time() < deadline and "can ever provide" not in err:
        err += capfd.readouterr().err
        time.sleep(0.1)
    assert "can ever provide" in err


def test_local_mode_runs_serially_with_the_same_api():
    ray.init(local_mode=True)
    try:
        @ray.remote
        def f(x):
            return x * 2

        @ray.remote
        class C:
            def __init__(self):
                self.n = 0

            def inc(self):
                self.n += 1
                return self.n

        @ray.remote
        def boom():
            raise ValueError("local")

        assert ray.get([f.remote(i) for i in range(3)]) == [0, 2, 4]
        c = C.remote()
        assert ray.get([c.inc.remote() for _ in range(3)]) == [1, 2, 3]
        assert ray.get(f.remote(ray.put(21))) == 42
        with pytest.raises(ValueError):
            ray.get(boom.remote())
    finally:
        ray.shutdown()


def test_custom_serializer(cluster):
    class Opaque:
        def __init__(self, v):
            self.v = v

        def __reduce__(self):
            raise TypeError("not picklable")

    ray.register_custom_serializer(
        Opaque, serializer=lambda o: o.v, deserializer=lambda v: Opaque(v)
    )

    @ray.remote
    def read(o):
        return o.v

    assert ray.get(read.remote(Opaque(7))) == 7
    assert ray.get(ray.put(Opaque(3))).v == 3


def test_memory_is_freed_when_refs_drop(ray_start):
    import numpy as np

    ray_start(object_store_memory=300 * 1024**2)
    for _ in range(20):
        ref = ray.put(np.ones(40 * 1024**2, dtype=np.uint8))  # 40 MB, store holds ~7
        assert ray.get(ref)[0] == 1
        del ref


def test_redis_shards_hold_the_sharded_tables(ray_start):
    import redis

    from ray._private.gcs import keys

    info = ray_start(num_redis_shards=2)

    @ray.remote
    def traced(i):
        with ray.profile("sharded"):
            return i

    ray.get([traced.remote(i) for i in range(10)])
    from ray._private import auth

    password = auth.cluster_secret()  # every shard requires the cluster secret
    primary = redis.Redis.from_url(f"redis://{info['redis_address']}", password=password)
    shards = json.loads(primary.get(keys.REDIS_SHARDS))
    assert len(shards) == 2
    deadline = time.time() + 10
    while time.time() < deadline:
        in_shards = sum(redis.Redis.from_url(f"redis://{a}", password=password)
                        .llen(keys.PROFILE_EVENTS) for a in shards)
        if in_shards and sum(e["name"] == "sharded" for e in ray.timeline()) == 10:
            break
        time.sleep(0.2)
    assert in_shards > 0 and primary.llen(keys.PROFILE_EVENTS) == 0
    assert sum(e["name"] == "sharded" for e in ray.timeline()) == 10
    primary.close()
