"""The cyclic garbage collector and a driver's or worker's start-up heap.

A full (generation 2) collection walks every object the collector tracks. By the time a
driver or worker has connected, most of those are modules, classes and functions that live
as long as the process, and the runtime keeps several tracked objects per task in flight
(refs, pending tasks, specs), so a burst of tasks triggers full collections that mostly
re-walk the start-up heap: on a driver with 20,000 no-op tasks in flight the two full
collections took 62-65 ms each, 8.3 µs of the collector per task (of ~30 µs per task on
the driver's main thread). ``gc.freeze()`` moves what exists at connect time to the
permanent generation, which collections skip: 16-18 ms each, 3.8-4.1 µs per task
(``benchmarks/bench_gc_burst.py`` with and without ``--no-freeze``).

A driver collects before it freezes, so no unreachable cycle is frozen. What freezing
gives up: a cycle among objects that existed before connecting, broken and dropped while
connected, is not reclaimed until ``ray.shutdown()`` thaws the heap (plain reference
counting still frees everything that is not in a cycle). ``gc_freeze_startup_heap: false``
in the system config turns it off.
"""

from __future__ import annotations

import gc


def freeze_startup_heap(*, collect_first: bool) -> bool:
    """Move every tracked object to the permanent generation (after a collection when
    ``collect_first``: a driver, whose user may have dropped cycles before connecting;
    a worker freezes only what its start-up imported, and skips the ~15 ms collection on
    the way to its first task). Returns whether ``thaw`` may undo it at shutdown: not
    when the process had frozen objects itself (``gc.unfreeze`` would thaw those too)."""
    frozen_before = gc.get_freeze_count() > 0
    if collect_first:
        gc.collect()
    gc.freeze()
    return not frozen_before


def thaw() -> None:
    """Hand the frozen objects back to the collector (their next full collection)."""
    gc.unfreeze()
