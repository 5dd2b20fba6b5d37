"""A connected driver and its workers freeze their start-up heap (``gc.freeze`` after a
collection: full collections skip it); ``ray.shutdown()`` hands it back to the collector,
and ``gc_freeze_startup_heap: false`` turns it off."""

import gc
import weakref

import ray


@ray.remote
def worker_freeze_count():
    return gc.get_freeze_count()


class _Node:
    pass


def test_driver_and_workers_freeze_their_start_up_heap_and_shutdown_thaws_it():
    assert gc.get_freeze_count() == 0
    ray.init(num_cpus=1, include_dashboard=False)
    try:
        assert gc.get_freeze_count() > 1000  # modules, classes, functions
        assert ray.get(worker_freeze_count.remote()) > 1000
        # What is made while connected is collected as usual, cycles included.
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        alive = weakref.ref(a)
        del a, b
        gc.collect()
        assert alive() is None
    finally:
        ray.shutdown()
    assert gc.get_freeze_count() == 0


def test_a_cycle_made_before_init_and_dropped_while_connected_is_reclaimed_after_shutdown():
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    alive = weakref.ref(a)
    ray.init(num_cpus=1, include_dashboard=False)
    try:
        del a, b
        gc.collect()
        assert alive() is not None  # frozen with the start-up heap
    finally:
        ray.shutdown()
    gc.collect()
    assert alive() is None


def test_the_freeze_can_be_turned_off():
    ray.init(num_cpus=1, include_dashboard=False,
             _system_config={"gc_freeze_startup_heap": False})
    try:
        assert gc.get_freeze_count() == 0
        assert ray.get(worker_freeze_count.remote()) == 0
    finally:
        ray.shutdown()


def test_a_heap_the_program_froze_itself_stays_frozen_after_shutdown():
    gc.freeze()  # the program's own choice (e.g. before forking)
    try:
        ray.init(num_cpus=1, include_dashboard=False)
        ray.shutdown()
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
