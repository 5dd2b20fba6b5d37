"""Cython-compiled classes become actors with all their methods (0.7's is_cython check)."""

import subprocess
import sys
import textwrap

import pytest

from ray.actor import _method_table


@pytest.fixture(scope="module")
def compiled_class(tmp_path_factory):
    pytest.importorskip("Cython")
    build = tmp_path_factory.mktemp("cy_actor")
    (build / "cy_counter.pyx").write_text(textwrap.dedent("""\
        # cython: embedsignature=True, binding=True, language_level=3
        class Counter:
            def __init__(self):
                self.value = 0

            def increment(self):
                self.value += 1
                return self.value
        """))
    (build / "setup.py").write_text(
        "from Cython.Build import cythonize\nfrom setuptools import setup\n"
        "setup(ext_modules=cythonize('cy_counter.pyx'))\n"
    )
    proc = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=build,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    sys.path.insert(0, str(build))
    try:
        import cy_counter

        yield cy_counter.Counter
    finally:
        sys.path.remove(str(build))
        sys.modules.pop("cy_counter", None)


def test_cython_class_methods_are_actor_methods(compiled_class):
    assert type(compiled_class.increment).__name__ == "cython_function_or_method"
    table = _method_table(compiled_class)
    assert {name for name in table if not name.startswith("__")} == {"increment"}
    assert table["increment"].num_returns == 1 and table["increment"].is_async is False
