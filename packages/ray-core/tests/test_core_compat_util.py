"""Ray 2.x public modules outside the runtime: ray.cloudpickle, ray.util.check_serialize,
ray.job_config, ray.types, ray.util.accelerators. Pure: no cluster."""

import io
import pickle
import threading
import weakref

import numpy as np
import pytest

import ray
from ray.job_config import JobConfig


# -- modules reachable as attributes of ray ---------------------------------------------------
def test_ray_2x_modules_are_attributes_after_import_ray():
    import subprocess
    import sys

    code = ("import ray; print(ray.cloudpickle.__name__, ray.job_config.JobConfig.__name__, "
            "ray.runtime_context.get_runtime_context.__name__, ray.util.ActorPool.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["ray.cloudpickle", "JobConfig", "get_runtime_context", "ActorPool"]


# -- ray.cloudpickle ---------------------------------------------------------------------
def test_cloudpickle_is_reachable_as_ray_attribute_and_module():
    from ray import cloudpickle as from_import

    assert ray.cloudpickle is from_import
    assert from_import.Pickler is from_import.CloudPickler


def test_cloudpickle_pickles_closures_and_out_of_band_buffers():
    from ray.cloudpickle import dumps, loads

    offset = 3
    assert loads(dumps(lambda x: x + offset))(1) == 4
    array = np.zeros(314)
    buffers = []
    inband = dumps(array, protocol=5, buffer_callback=buffers.append)
    assert len(inband) < array.nbytes and len(buffers) == 1
    assert np.array_equal(loads(inband, buffers=buffers), array)


def test_cloudpickler_pickles_a_dynamic_function_without_keeping_it_alive():
    from ray.cloudpickle import CloudPickler, loads

    def f():
        return 4669201609102990671853203821578

    ref = weakref.ref(f)
    out = io.BytesIO()
    pickler = CloudPickler(out, protocol=5)
    pickler.dump(f)
    assert loads(out.getvalue())() == 4669201609102990671853203821578
    del pickler, f
    assert ref() is None


def test_cloudpickle_keeps_file_names_so_remote_tracebacks_show_source_lines():
    import traceback

    from ray.cloudpickle import dumps, loads

    def fails(x):
        raise ValueError(x + 1)

    copy = loads(dumps(fails))
    assert copy.__code__.co_filename == __file__
    with pytest.raises(ValueError) as info:
        copy(1)
    assert "raise ValueError(x + 1)" in "".join(traceback.format_tb(info.tb))


def test_dumps_debug_raises_the_same_error_type_naming_how_to_find_the_culprit():
    from ray.cloudpickle import dumps_debug

    lock = threading.Lock()

    def uses_lock():
        return lock

    with pytest.raises(TypeError, match="RAY_PICKLE_VERBOSE_DEBUG") as info:
        dumps_debug(uses_lock)
    assert "_thread.lock" in str(info.value)
    assert pickle.loads(dumps_debug(3)) == 3


def test_dumps_debug_prints_the_inspection_report_when_verbose(monkeypatch, capsys):
    from ray.cloudpickle import dumps_debug

    monkeypatch.setenv("RAY_PICKLE_VERBOSE_DEBUG", "1")
    with pytest.raises(TypeError):
        dumps_debug(threading.Lock())
    assert "Checking Serializability of" in capsys.readouterr().out


# -- ray.util.inspect_serializability ------------------------------------------------------
def _lock_holders():
    """Objects that cannot be pickled because of one lock: the lock itself, a local
    function that uses it, and a local class whose method does (local: a module-level
    function or class pickles by reference, lock or not)."""
    lock = threading.Lock()

    def uses_lock():
        return lock

    class HoldsLockInMethod:
        def grab(self):
            self.lock = lock

    return lock, {"object": lock, "function": uses_lock, "class": HoldsLockInMethod}


@pytest.mark.parametrize("kind", ["object", "function", "class"])
def test_inspect_serializability_finds_the_lock(kind):
    lock, targets = _lock_holders()
    ok, failures = ray.util.inspect_serializability(targets[kind], print_file=io.StringIO())
    assert not ok
    assert [f.obj for f in failures] == [lock]


def test_inspect_serializability_finds_a_closure_variable_and_names_it():
    lock = threading.Lock()

    def uses_closure():
        return lock

    report = io.StringIO()
    ok, failures = ray.util.inspect_serializability(uses_closure, print_file=report)
    (failure,) = failures
    assert not ok and failure.obj is lock and failure.name == "lock"
    assert failure.parent is uses_closure
    text = report.getvalue()
    assert "Checking Serializability of" in text and "was found to be non-serializable" in text


def test_inspect_serializability_of_a_picklable_object_is_clean():
    ok, failures = ray.util.inspect_serializability({"a": [1, 2]}, print_file=io.StringIO())
    assert ok and failures == set()
    with pytest.raises(ValueError, match="depth"):
        ray.util.inspect_serializability(1, depth=-1)


# -- ray.job_config ----------------------------------------------------------------------
def test_job_config_defaults_and_fields():
    config = JobConfig()
    assert config.default_actor_lifetime == "non_detached" and not config.detached_by_default
    assert config.code_search_path == [] and config.runtime_env == {} and config.metadata == {}
    config = JobConfig(code_search_path=("/a", "/b"), runtime_env={"env_vars": {"A": "1"}},
                       metadata={"k": "v"}, ray_namespace="ns",
                       default_actor_lifetime="detached", _py_driver_sys_path=["/c"])
    assert config.detached_by_default and config.ray_namespace == "ns"
    assert config.worker_sys_path() == ["/a", "/b", "/c"]
    config.set_metadata("owner", "etl")
    assert config.metadata == {"k": "v", "owner": "etl"}
    assert ray.job_config.JobConfig is JobConfig


def test_job_config_round_trips_through_json_and_pickle():
    config = JobConfig(code_search_path=["/a"], metadata={"k": "v"}, ray_namespace="n",
                       default_actor_lifetime="detached")
    again = JobConfig.from_json(config.to_dict())
    assert again.to_dict() == config.to_dict()
    assert pickle.loads(pickle.dumps(config)).to_dict() == config.to_dict()
    with pytest.raises(ValueError, match="unknown keys"):
        JobConfig.from_json({"ray_namespce": "x"})


@pytest.mark.parametrize("kwargs,error,match", [
    ({"default_actor_lifetime": "forever"}, ValueError, "detached"),
    ({"code_search_path": "/a"}, TypeError, "code_search_path"),
    ({"code_search_path": [1]}, TypeError, "str paths"),
    ({"jvm_options": ["-Xmx1g"]}, ValueError, "Python workers only"),
    ({"metadata": {"k": 1}}, TypeError, "strings"),
    ({"runtime_env": ["pip"]}, TypeError, "runtime_env"),
    ({"ray_namespace": ""}, TypeError, "ray_namespace"),
])
def test_job_config_rejects_bad_values_naming_the_field(kwargs, error, match):
    with pytest.raises(error, match=match):
        JobConfig(**kwargs)


def test_job_config_validates_runtime_env_on_request():
    config = JobConfig()
    config.set_runtime_env({"no_such_field": 1})  # stored as given, like Ray
    with pytest.raises(Exception, match="no_such_field"):
        config.set_runtime_env({"no_such_field": 1}, validate=True)


# -- small public modules ------------------------------------------------------------------
def test_types_object_ref_is_a_generic_annotation():
    from ray.types import ObjectRef

    def produce() -> ObjectRef[int]: ...

    assert produce.__annotations__["return"] == ObjectRef[int]


def test_accelerator_names():
    from ray.util import accelerators

    assert accelerators.NVIDIA_TESLA_V100 == "V100"
    assert accelerators.NVIDIA_A100 == "A100"
    assert "GOOGLE_TPU_V4" in accelerators.__all__
