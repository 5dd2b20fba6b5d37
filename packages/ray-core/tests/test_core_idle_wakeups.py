"""An idle process wakes rarely: the timer that releases references dropped by
``__del__`` hooks backs off while nothing is dropped (10 ms -> 250 ms), and a reference
dropped after a long idle stretch is still released promptly (by the timer within its
longest period, at once by the next ``ray.get`` or submission)."""

import time

import numpy as np

import ray
from ray._private.api import connected_runtime
from ray._private.runtime import core_worker


def _released_within(core, object_id: bytes, timeout_s: float) -> float | None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        if not core.refs.is_tracked(object_id):
            return time.monotonic() - t0
        time.sleep(0.005)
    return None


def test_the_release_timer_backs_off_when_idle_and_still_releases(ray_start):
    ray_start(num_cpus=1)
    core = connected_runtime()
    ref = ray.put(np.zeros(1 << 20, dtype=np.uint8))
    object_id = ref.binary()
    # Idle: the period doubles from 10 ms up to its ceiling (about 0.3 s; more under load).
    deadline = time.monotonic() + 10
    while core._drain_period < core_worker._DRAIN_MAX_S and time.monotonic() < deadline:
        time.sleep(0.05)
    assert core._drain_period == core_worker._DRAIN_MAX_S
    del ref  # queued by ObjectRef.__del__; only the backed-off timer releases it
    took = _released_within(core, object_id, 5.0)
    assert took is not None and took < 1.0, took
    # Having released something, the timer is back at its shortest period.
    assert core._drain_period == core_worker._DRAIN_MIN_S


def test_a_get_releases_what_was_dropped_before_it_blocks(ray_start):
    ray_start(num_cpus=1)
    core = connected_runtime()

    @ray.remote
    def nap():
        time.sleep(0.3)

    ref = ray.put(np.zeros(1 << 20, dtype=np.uint8))
    object_id = ref.binary()
    time.sleep(1.0)
    pending = nap.remote()
    del ref
    ray.get(pending)  # the drop is released before this blocks, not after
    assert not core.refs.is_tracked(object_id)
