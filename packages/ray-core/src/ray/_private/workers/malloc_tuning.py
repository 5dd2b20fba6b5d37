"""glibc malloc settings for worker processes.

A task that builds large numpy temporaries (a sort's keys and row order, a block's
columns) asks glibc for multi-MB blocks; by default glibc serves those with fresh
``mmap`` pages or trims them off the heap when freed, so the next task touches new
pages again. Each first touch is a page fault, and under a hypervisor a fault costs
microseconds: a 250k-row ray.data merge took 2,700 faults and ~2x its fault-free time
on this VM. Workers run task after task, so they keep freed memory for reuse instead:
blocks up to ``mmap_threshold`` come from the heap and up to ``trim_threshold`` free
bytes stay mapped. (Drivers are the user's processes and keep glibc's defaults.)
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

logger = logging.getLogger(__name__)

_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3


def keep_freed_memory(mmap_threshold: int, trim_threshold: int) -> bool:
    """Apply both thresholds (bytes; 0 leaves glibc's defaults). False when the C
    library is not glibc (musl has no such knobs) or refuses the values."""
    if not mmap_threshold and not trim_threshold:
        return False
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        logger.debug("no mallopt in %s: malloc thresholds left as they are", name)
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    ok = True
    if mmap_threshold:
        ok = mallopt(_M_MMAP_THRESHOLD, mmap_threshold) == 1 and ok
    if trim_threshold:
        ok = mallopt(_M_TRIM_THRESHOLD, trim_threshold) == 1 and ok
    return ok
