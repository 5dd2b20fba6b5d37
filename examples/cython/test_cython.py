"""The test compiles the Cython examples (gcc + Cython), puts them on the workers' path
and runs every example through Ray."""

import importlib.util
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import ray

HERE = os.path.dirname(__file__)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    pytest.importorskip("Cython")
    build = tmp_path_factory.mktemp("cython_build")
    shutil.copytree(os.path.join(HERE, "cython_examples"), build / "cython_examples")
    shutil.copy(os.path.join(HERE, "setup.py"), build)
    proc = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "-j", "2"], cwd=build,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    # Workers inherit the environment of the process that starts the cluster: this is
    # how the compiled modules reach them (Ray does not distribute Cython code).
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(build), old) if p)
    sys.path.insert(0, str(build))
    ray.init(num_cpus=2)
    yield build
    ray.shutdown()
    sys.path.remove(str(build))
    if old is None:
        os.environ.pop("PYTHONPATH")
    else:
        os.environ["PYTHONPATH"] = old
    for name in [m for m in sys.modules if m.startswith("cython_examples")]:
        del sys.modules[name]


def _main_module():
    spec = importlib.util.spec_from_file_location("cython_main", os.path.join(HERE, "cython_main.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_compiled_functions_carry_embedded_signatures(compiled):
    from cython_examples import cython_simple

    assert "simple_func(x, y, z)" in cython_simple.simple_func.__doc__
    assert cython_simple.fib.__module__ == "cython_examples.cython_simple"


def test_every_cython_example_runs_on_ray(compiled):
    results = _main_module().main(["--example", "all"])
    assert results["example1"] == 6
    assert results["example2"] == [0, 1, 1, 2, 3, 5, 8, 13, 21, 34]
    assert results["example3"] == results["example4"] == results["example5"] == 75025
    assert results["example6"] == [1, 2, 3]
    assert results["example7"] == pytest.approx(float(np.arange(1000.0) @ np.arange(1000.0)))
    assert np.allclose(results["example8"], [0.0, 1.0, 0.0, 0.0, 2.0])


def test_a_raw_memoryview_argument_loses_its_type_and_is_refused(compiled):
    """The documents' example8 limitation: a memory buffer is not a typed array on arrival."""
    from cython_examples import cython_blas

    buffer = memoryview(np.ones(4))
    with pytest.raises(ray.exceptions.RayTaskError, match="Buffer dtype mismatch"):
        ray.get(ray.remote(cython_blas.masked_log).remote(buffer))
