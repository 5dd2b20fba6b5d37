"""Workers keep freed heap memory for the next task (``workers/malloc_tuning``): a task
that builds and drops large arrays does not fault in fresh pages every time."""

import pytest

import ray
from ray._private.workers import malloc_tuning

_CHURN_FAULTS = """
import resource
import numpy as np

def churn():  # three 8 MiB arrays alive at once, then freed (past glibc's default trim)
    arrays = [np.ones(8 << 20, dtype=np.uint8) for _ in range(3)]
    del arrays

churn()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    churn()
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
"""


def _faults() -> int:
    scope: dict = {}
    exec(_CHURN_FAULTS, scope)
    return scope["faults"]


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=1)
    yield
    ray.shutdown()


def test_a_worker_reuses_freed_memory_instead_of_faulting_in_new_pages(cluster):
    faults = ray.get(ray.remote(_faults).remote())
    # 20 rounds of 24 MiB from fresh pages would be ~120,000 faults (about 20,000 with
    # glibc's adaptive defaults); kept on the heap, next to none.
    assert faults < 500, faults


def test_thresholds_of_zero_leave_glibc_alone_and_a_subprocess_shows_the_default():
    import subprocess
    import sys

    assert malloc_tuning.keep_freed_memory(0, 0) is False
    code = _CHURN_FAULTS + "\nprint(faults)\n"
    untuned = int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 check=True).stdout)
    assert untuned > 2000  # what the tuning removes: the test above measures the real thing
