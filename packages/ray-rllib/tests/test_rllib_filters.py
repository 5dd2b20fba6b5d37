import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ray.rllib.utils.filter import MeanStdFilter, NoFilter, RunningStat, get_filter

_rows = st.lists(st.floats(-100, 100, allow_nan=False), min_size=1, max_size=30)


@settings(max_examples=50, deadline=None)
@given(_rows, _rows)
def test_merged_running_stats_equal_one_stream(a, b):
    left, right, whole = RunningStat(()), RunningStat(()), RunningStat(())
    for x in a:
        left.push(x)
        whole.push(x)
    for x in b:
        right.push(x)
        whole.push(x)
    left.update(right)
    assert left.n == whole.n
    np.testing.assert_allclose(left.mean, whole.mean, atol=1e-7)
    np.testing.assert_allclose(left.var, whole.var, rtol=1e-6, atol=1e-6)


def test_mean_std_filter_normalizes_observations():
    flt = MeanStdFilter((2,), clip=None)
    data = np.random.default_rng(0).normal(5.0, 3.0, size=(2000, 2))
    out = flt(data)
    assert abs(out.mean()) < 0.1
    assert abs(out.std() - 1.0) < 0.1


def test_filter_sync_protocol_counts_each_observation_once():
    """Driver merges each worker's buffer, then pushes the merged state back."""
    driver = MeanStdFilter((1,), clip=None)
    workers = [driver.copy(), driver.copy()]
    workers[0](np.ones((10, 1)))
    workers[1](np.zeros((30, 1)))
    for w in workers:
        driver.apply_changes(w, with_buffer=False)
        w.clear_buffer()
    for w in workers:
        w.sync(driver)
    assert driver.rs.n == 40
    np.testing.assert_allclose(driver.rs.mean, [0.25])
    assert all(w.rs.n == 40 for w in workers)


def test_update_false_leaves_statistics_alone():
    flt = MeanStdFilter((1,))
    flt(np.ones(1), update=False)
    assert flt.rs.n == 0


def test_get_filter_names():
    assert isinstance(get_filter("NoFilter", (2,)), NoFilter)
    assert isinstance(get_filter("MeanStdFilter", (2,)), MeanStdFilter)
