"""The call API as Ray 2.x defines it: argument binding at ``.remote()``, option checks
with Ray's messages, ``_remote``, ``__ray_invocation_decorator__``, oversized functions,
id lengths and job ids, ``ray.wait([])``, ``memory``/``accelerator_type``/custom
resources, ``JobConfig``, and auto-init / joining clusters (in fresh processes)."""

import os
import pickle
import re
import subprocess
import sys
import textwrap
import time

import pytest

import ray
from ray._private.signatures import CallSignature
from ray.job_config import JobConfig

HERE = os.path.dirname(os.path.abspath(__file__))


# -- pure: no cluster ------------------------------------------------------------------
def test_call_signature_binds_like_python():
    def f(a, b=1, *args, c, d=2, **kw):
        return a

    sig = CallSignature.of(f)
    sig.check((1,), {"c": 3}, "f")
    sig.check((1, 2, 3, 4), {"c": 3, "zz": 1}, "f")
    with pytest.raises(TypeError, match=r"^f: missing a required argument: 'a'"):
        sig.check((), {"c": 1}, "f")
    with pytest.raises(TypeError, match="c"):
        sig.check((1,), {}, "f")
    # The binding form travels (pickled with handles, msgpack in the GCS) without defaults.
    again = pickle.loads(pickle.dumps(sig))
    assert again.to_wire() == sig.to_wire()
    with pytest.raises(TypeError):
        again.check((), {}, "f")


def test_call_signature_drops_self_but_not_for_static_methods():
    from ray._private.actor_methods import method_table

    class A:
        def m(self, x):
            return x

        @staticmethod
        def s(x):
            return x

        @classmethod
        def c(cls, x):
            return x

    table = method_table(A)
    for name in ("m", "s", "c"):
        table[name].signature.check((1,), {}, name)
        with pytest.raises(TypeError):
            table[name].signature.check((1, 2), {}, name)


def test_option_type_and_value_errors_use_rays_messages():
    def f():
        return 1

    class A:
        pass

    for keyword in ("max_retries", "max_calls"):
        with pytest.raises(TypeError, match=re.escape(
                f"The type of keyword '{keyword}' must be {(int, type(None))}, but received "
                f"type {float}")):
            ray.remote(**{keyword: 0.5})(f)
    with pytest.raises(TypeError, match=re.escape(f"{(int, str, type(None))}")):
        ray.remote(num_returns=0.5)(f)
    with pytest.raises(ValueError, match="only accepts None, 0 or a positive integer"):
        ray.remote(max_calls=-1)(f)
    with pytest.raises(ValueError, match="'streaming' \\(for generators\\), or 'dynamic'"):
        ray.remote(num_returns=-1)(f)
    with pytest.raises(ValueError, match="-1 represents infinity"):
        ray.remote(max_retries=-2)(f)
    for keyword in ("max_restarts", "max_task_retries"):
        with pytest.raises(ValueError, match="-1 represents infinity"):
            ray.remote(**{keyword: -5})(A)
    with pytest.raises(ValueError, match="precision of the fractional quantity of resource "
                                         "num_gpus cannot go beyond 0.0001"):
        ray.remote(num_gpus=0.0000001)(f)
    with pytest.raises(ValueError, match="resource custom cannot go beyond 0.0001"):
        ray.remote(resources={"custom": 0.0000001})(f)
    with pytest.raises(ValueError, match="retry_exceptions must be either a boolean or a list"):
        ray.remote(retry_exceptions=[1])(f)
    with pytest.raises(ValueError, match="not implemented for tasks"):
        ray.remote(object_store_memory=10)(f)
    with pytest.raises(ValueError, match="not supported in '.options\\(\\)'"):
        ray.remote(f).options(max_calls=1)
    with pytest.raises(ValueError, match="can only be used with generator functions"):
        ray.remote(num_returns="dynamic")(f)


def test_checkpoint_interval_is_refused_naming_max_restarts_and_checkpointable():
    class A:
        pass

    for make in (lambda: ray.remote(checkpoint_interval=5)(A),
                 lambda: ray.remote(A).options(checkpoint_interval=5)):
        with pytest.raises(ValueError, match=r"'checkpoint_interval'.*not supported.*"
                                             r"max_restarts.*ray\.actor\.Checkpointable"):
            make()


def test_metadata_is_checked_kept_and_updated_per_namespace():
    def f():
        return 1

    class A:
        pass

    given = {"my_lib": {"a": 1}, "other": {"z": 0}}
    remote_f = ray.remote(_metadata=given)(f)
    given["my_lib"]["a"] = 99  # the caller's dict changing later changes nothing here
    assert remote_f._options._metadata == {"my_lib": {"a": 1}, "other": {"z": 0}}
    updated = remote_f.options(_metadata={"my_lib": {"b": 2}})
    assert updated._opts._metadata == {"my_lib": {"a": 1, "b": 2}, "other": {"z": 0}}
    assert remote_f._options._metadata == {"my_lib": {"a": 1}, "other": {"z": 0}}
    assert remote_f.options(num_cpus=1)._opts._metadata == remote_f._options._metadata

    actor_class = ray.remote(_metadata={"my_lib": {"a": 1}})(A)
    assert actor_class._options._metadata == {"my_lib": {"a": 1}}
    assert actor_class.options(_metadata={"new": {}})._opts._metadata == {
        "my_lib": {"a": 1}, "new": {}}
    assert ray.remote(A)._options._metadata is None

    with pytest.raises(TypeError, match="keyword '_metadata' must be"):
        ray.remote(_metadata=["my_lib"])(f)
    with pytest.raises(TypeError, match="namespace \\(a string\\).*got the key 1"):
        ray.remote(_metadata={1: {}})(A)
    with pytest.raises(TypeError, match="the namespace 'my_lib' maps to 3"):
        ray.remote(f).options(_metadata={"my_lib": 3})


def test_decorator_misuse_is_rejected():
    with pytest.raises(TypeError, match="must be applied either with no arguments"):
        @ray.remote()
        class Actor:
            pass

    with pytest.raises(ValueError, match="Invalid option keyword invalid_kwarg for actors"):
        @ray.remote(num_cpus=0, invalid_kwarg=0)
        class Actor2:
            pass

    with pytest.raises(ValueError, match="'async def' should not be used for remote tasks"):
        @ray.remote
        async def f():
            pass


def test_object_ref_ids_of_both_eras_and_job_ids():
    modern = ray.ObjectRef(b"0011223344556677889900001111")  # Ray 2.x: 28 bytes
    old = ray.ObjectID(b"00112233445566778899")  # 0.7: 20 bytes
    assert modern.binary() == b"0011223344556677889900001111" and len(old.binary()) == 20
    for bad in (b"0123456789", b"0011223344556677889900001111" + b"1234"):
        with pytest.raises(ValueError, match="needs to have length 20"):
            ray.ObjectRef(bad)
    assert ray.ObjectRef.nil().is_nil() and not ray.ObjectRef.from_random().is_nil()
    ref = ray.ObjectRef.from_random()
    assert pickle.loads(pickle.dumps(ref)) == ref
    assert modern.job_id().binary() == b"0011"


# -- one cluster for the module --------------------------------------------------------
@pytest.fixture(scope="module")
def cluster():
    info = ray.init(num_cpus=2, object_store_memory=256 * 1024**2, num_gpus=0,
                    resources={"Custom": 2, "CustomResource": 1})
    yield info
    ray.shutdown()


def test_task_arguments_bind_at_the_call(cluster):
    @ray.remote
    def f(x, y=0, z=0):
        return x + y + z

    @ray.remote
    def starred(a, x="hello", **kwargs):
        return a, x, kwargs

    assert ray.get(f.remote(1, z=2)) == 3
    assert ray.get(starred.remote(1, y=3)) == (1, "hello", {"y": 3})
    for args, kwargs in (((), {}), ((0,), {"w": 0}), ((3,), {"x": 3}), ((1, 2, 3, 4), {})):
        with pytest.raises(TypeError, match=r"f\.remote\(\)"):
            f.remote(*args, **kwargs)
    with pytest.raises(TypeError):
        starred.remote(1, 2, x=3)


def test_actor_constructor_and_method_arguments_bind_at_the_call(cluster):
    @ray.remote
    class Actor:
        def __init__(self, arg0, arg1=1):
            self.base = arg0 + arg1

        def get(self, a, b=0, **kw):
            return self.base + a + b + sum(kw.values())

    with pytest.raises(TypeError, match=r"Actor\.remote\(\)"):
        Actor.remote()
    with pytest.raises(TypeError):
        Actor.remote(0, arg0=1)
    actor = Actor.remote(1)
    assert ray.get(actor.get.remote(1, c=5)) == 8
    with pytest.raises(TypeError, match=r"Actor\.get\.remote\(\)"):
        actor.get.remote()

    @ray.remote
    def through_a_task(handle):  # the handle carries the signatures
        try:
            handle.get.remote()
        except TypeError:
            return ray.get(handle.get.remote(2))
        return None

    assert ray.get(through_a_task.remote(actor)) == 4


def test_private_remote_spellings_used_by_libraries(cluster):
    @ray.remote
    def f(n):
        return list(range(n))

    @ray.remote
    class Actor:
        def __init__(self, x, y=0):
            self.x, self.y = x, y

        def method(self, a, b=0):
            return self.x, self.y, a, b

    assert f._remote([0], num_returns=0) is None
    id1, id2 = f._remote(args=[2], num_returns=2)
    assert ray.get([id1, id2]) == [0, 1]
    actor = Actor._remote(args=[0], kwargs={"y": 1}, num_cpus=0)
    refs = actor.method._remote(args=["t"], kwargs={"b": 2}, num_returns=4)
    assert ray.get(refs) == [0, 1, "t", 2]


def test_invocation_decorator_wraps_the_call(cluster):
    def reverse_args(call):
        def wrapped(args, kwargs):
            return call(args[::-1], {"d": 5}), kwargs

        return wrapped

    def f(a, b, c, d=None):
        return a, b, c, d

    f.__ray_invocation_decorator__ = reverse_args
    remote_f = ray.remote(f)
    ref, kwargs = remote_f.remote(1, 2, 3, d=4)
    assert kwargs == {"d": 4} and ray.get(ref) == (3, 2, 1, 5)


def test_oversized_functions_and_classes_are_rejected(cluster):
    big = bytearray(101 * 10**6)

    @ray.remote
    def f():
        return len(big)

    @ray.remote
    class Holder:
        def size(self):
            return len(big)

    with pytest.raises(ValueError, match="The remote function .*f is too large"):
        f.remote()
    with pytest.raises(ValueError, match="The actor Holder is too large"):
        Holder.remote()


def test_wait_of_nothing_and_job_ids_everywhere(cluster):
    assert ray.wait([]) == ([], [])
    with pytest.raises(TypeError):
        ray.wait(1)

    @ray.remote
    def foo():
        return "bar"

    @ray.remote
    class Foo:
        def ping(self):
            return "pong"

    @ray.remote
    def ids():
        a = Foo.remote()
        return (ray.get_runtime_context().get_job_id(), foo.remote().job_id().hex(),
                ray.put(1).job_id().hex(), a._actor_id.job_id.hex(),
                a.ping.remote().job_id().hex())

    job = ray.get_runtime_context().get_job_id()
    assert set(ray.get(ids.remote())) == {job}


def test_remote_functions_and_actor_classes_travel_to_tasks(cluster):
    @ray.remote
    def f():
        return 1

    @ray.remote
    class Actor:
        def method(self):
            return 2

    @ray.remote
    def use(remote_function, actor_class):
        return ray.get(remote_function.remote()) + ray.get(actor_class.remote().method.remote())

    assert ray.get(use.remote(f, Actor)) == 3


def test_metadata_leaves_the_call_alone_and_travels_with_the_function(cluster):
    @ray.remote(_metadata={"my_lib": {"a": 1}})
    def f():
        return 1

    @ray.remote(_metadata={"my_lib": {"b": 2}})
    class Actor:
        def method(self):
            return 2

    @ray.remote
    def read_back(remote_function, actor_class):
        return remote_function._options._metadata, actor_class._options._metadata

    assert ray.get(f.options(_metadata={"my_lib": {"c": 3}}).remote()) == 1
    assert ray.get(Actor.remote().method.remote()) == 2
    assert ray.get(read_back.remote(f, Actor)) == ({"my_lib": {"a": 1}}, {"my_lib": {"b": 2}})


def test_07_custom_serializers_reach_the_workers_and_2x_ones_stay_local(cluster):
    class Shared:
        pass

    class LocalOnly:
        pass

    def serializer(obj):
        return type(obj).__name__

    def deserializer(name):
        return ("rebuilt", name)

    ray.register_custom_serializer(Shared, serializer=serializer, deserializer=deserializer)
    ray.util.register_serializer(LocalOnly, serializer=serializer, deserializer=deserializer)
    try:
        @ray.remote
        def make():
            return Shared(), isinstance(LocalOnly(), LocalOnly)

        # The worker serializes Shared as the driver registered it (0.7's local=False)...
        assert ray.get(make.remote()) == (("rebuilt", "Shared"), True)
        # ...and both kinds apply to what the driver itself stores.
        assert ray.get(ray.put(LocalOnly())) == ("rebuilt", "LocalOnly")
        with pytest.raises(ValueError, match="job_id"):
            ray.register_custom_serializer(Shared, use_pickle=True, job_id=1)
    finally:
        ray.util.deregister_serializer(Shared)
        ray.util.deregister_serializer(LocalOnly)


def test_memory_accelerator_and_custom_resource_options(cluster):
    total_memory = ray.cluster_resources()["memory"]
    assert total_memory > 100 * 2**20

    @ray.remote(memory=100 * 2**20)
    def held(need):
        deadline = time.time() + 20
        while time.time() < deadline:  # the raylet's report reaches the GCS in a moment
            if ray.available_resources().get("memory", 0) <= total_memory - need:
                return True
            time.sleep(0.1)
        return False

    assert ray.get(held.remote(100 * 2**20))
    assert ray.get(held.options(memory=50 * 2**20, num_cpus=0.5).remote(50 * 2**20))

    @ray.remote(num_custom_resource=1)  # 0.2.2's single custom resource
    def custom():
        return ray.get_runtime_context().get_assigned_resources()

    assert ray.get(custom.remote())["CustomResource"] == 1
    assert ray.get(custom.options(resources={"Custom": 1.5}).remote())["Custom"] == 1.5

    @ray.remote(accelerator_type="NO_SUCH_ACCELERATOR")
    def accelerated():
        return 1

    ready, _ = ray.wait([accelerated.remote()], timeout=0.5)
    assert ready == []  # no node has that accelerator: it waits, as in Ray


# -- fresh processes: auto-init, ray.init(job_config=), joining clusters ---------------
def _run(script: str, env=None, timeout=180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_first_call_without_init_starts_ray_and_the_switch_turns_it_off():
    out = _run("""
        import ray

        @ray.remote
        def f(x):
            return x + 1

        assert not ray.is_initialized()
        print("value", ray.get(f.remote(1)), ray.is_initialized())
        ray.shutdown()
        print("put", ray.get(ray.put(3)))
    """)
    assert "value 2 True" in out.stdout and "put 3" in out.stdout, out.stderr
    env = {**os.environ, "RAY_ENABLE_AUTO_CONNECT": "0"}
    out = _run("import ray\nray.put(1)\n", env=env)
    assert out.returncode != 0 and "ray.init()" in out.stderr


def test_job_config_namespace_code_search_path_and_lifetime(tmp_path):
    module = tmp_path / "helper_mod_for_code_search.py"
    module.write_text("def value():\n    return 'from code_search_path'\n")
    out = _run(f"""
        import ray
        from ray.job_config import JobConfig

        ray.init(num_cpus=1, job_config=JobConfig(
            code_search_path=[{str(tmp_path)!r}], ray_namespace="jobns",
            default_actor_lifetime="detached", metadata={{"team": "core"}}))

        @ray.remote
        def imported():
            import helper_mod_for_code_search
            return helper_mod_for_code_search.value()

        @ray.remote
        class A:
            def ns(self):
                return ray.get_runtime_context().namespace

        a = A.options(name="a").remote()
        print("ns", ray.get_runtime_context().namespace, ray.get(a.ns.remote()))
        print("import", ray.get(imported.remote()))
        from ray.util.state import list_actors
        print("detached", [x.is_detached for x in list_actors(detail=True) if x.name == "a"])
    """)
    assert "ns jobns jobns" in out.stdout, out.stderr
    assert "import from code_search_path" in out.stdout, out.stderr
    assert "detached [True]" in out.stdout, out.stderr
    with pytest.raises(TypeError, match="JobConfig"):
        ray.init(job_config={"ray_namespace": "x"})
    assert JobConfig(default_actor_lifetime="detached").detached_by_default


def test_a_second_driver_joins_a_ray_init_cluster_on_this_machine(cluster):
    out = _run(f"""
        import ray
        ray.init(address={cluster["address"]!r})

        @ray.remote
        def f():
            return "second driver ran a task"

        print(ray.get(f.remote()))
    """)
    assert "second driver ran a task" in out.stdout, out.stderr
