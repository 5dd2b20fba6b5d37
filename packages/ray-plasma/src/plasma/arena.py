"""The shared-memory arena: one file, mapped once per process, pre-faulted.

The store creates the file (under /dev/shm, or a hugetlbfs mount for huge pages),
maps it and *unlinks it at once*: clients receive the open file descriptor over
the store socket (SCM_RIGHTS), so nothing is ever left behind in /dev/shm, even
when the store is killed with SIGKILL.

Pre-faulting. A first write to each 4 KiB page of fresh shared memory costs a
page fault (allocation + zeroing in the store's file, and a page-table entry in
every process that maps it): copying into fresh /dev/shm runs at ~1 GB/s here
against ~11 GB/s into pre-faulted memory. So the store allocates every page at
start, and every process populates *its own* page tables right after mapping,
both with ``madvise(MADV_POPULATE_WRITE)`` in 64 MiB chunks from a background
thread (ctypes drops the GIL around the call). Embedders that start many
short-lived clients cap or disable the clients' pass (ray: workers 0, drivers a
couple of GB). A client creating a large object its background pass has not covered
populates that object's range itself first (one madvise instead of a fault per
page). ``PLASMA_PREFAULT_BYTES`` / ``PLASMA_CLIENT_PREFAULT_BYTES`` cap how much
of the arena the store / each client pre-faults. The trade-off: the pre-faulted
part of the arena is resident from the start (like Ray's plasma with huge pages),
and start-up spends ~0.1-0.3 s of CPU per GB in the store plus a little per client
for page tables.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import tempfile
import threading

MADV_HUGEPAGE = 14
MADV_POPULATE_WRITE = 23  # Linux >= 5.14
_CHUNK_BYTES = 64 * 2**20
# The background pre-fault advances in small steps: each MADV_POPULATE_WRITE holds the
# process's mmap lock, and anything else in the process that maps memory (a thread
# stack, a large allocation) waits for the step to end. 64 MiB steps stalled the
# raylet's event loop for ~0.6 s in all while it started up.
_PREFAULT_STEP_BYTES = 2 * 2**20
_HUGE_PAGE_BYTES = 2 * 2**20

try:
    _libc = ctypes.CDLL(None, use_errno=True)
    _madvise = _libc.madvise
    _madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    _madvise.restype = ctypes.c_int
except (OSError, AttributeError):  # pragma: no cover - not Linux/glibc
    _madvise = None


def create_arena_file(
    capacity_bytes: int, *, directory: str, huge_pages: bool, name_prefix: str
) -> tuple[int, int]:
    """Create, size and unlink the arena file; returns ``(fd, size_bytes)``."""
    size = capacity_bytes
    if huge_pages:
        size = -(-size // _HUGE_PAGE_BYTES) * _HUGE_PAGE_BYTES
    fd, path = tempfile.mkstemp(prefix=f"{name_prefix}-", dir=directory)
    try:
        os.unlink(path)
        os.ftruncate(fd, size)
    except BaseException:
        os.close(fd)
        raise
    return fd, size


def map_arena(fd: int, size_bytes: int) -> mmap.mmap:
    mapped = mmap.mmap(fd, size_bytes, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    if _madvise is not None:
        # Transparent huge pages for shared memory, where the system allows it
        # (/sys/kernel/mm/transparent_hugepage/shmem_enabled = advise): 512x fewer
        # faults and page-table entries. A no-op elsewhere.
        _madvise(mapping_address(mapped), size_bytes, MADV_HUGEPAGE)
    return mapped


def mapping_address(mapped: mmap.mmap) -> int:
    """Base address of a mapping (the temporary ctypes export is dropped at once)."""
    view = ctypes.c_char.from_buffer(mapped)
    try:
        return ctypes.addressof(view)
    finally:
        del view


def prefault_nice() -> int:
    """Nice value of the background pre-fault threads (``PLASMA_PREFAULT_NICE``, default 0):
    an embedder that starts other processes at the same time lowers their priority."""
    try:
        return int(os.environ.get("PLASMA_PREFAULT_NICE", "0"))
    except ValueError:
        return 0


def prefault_limit(env_var: str) -> int | None:
    """Bytes to pre-fault from the start of the arena, from ``env_var`` (unset: all).

    Embedders cap it (ray pre-faults the first couple of GB of a large store, and
    worker processes none) so a big arena does not cost seconds of CPU and all its
    memory at start-up; objects beyond the limit fault in lazily.
    """
    value = os.environ.get(env_var)
    return None if value in (None, "") else max(0, int(value))


def populate(address: int, length: int) -> bool:
    """Populate page tables for ``[address, address + length)`` now (GIL released)."""
    if _madvise is None or length <= 0:
        return False
    page = mmap.PAGESIZE
    start = address // page * page
    return _madvise(start, address + length - start, MADV_POPULATE_WRITE) == 0


def populate_parallel(address: int, length: int, *, threads: int = 2) -> None:
    """``populate`` split over ``threads`` threads for large ranges."""
    if threads < 2 or length < _CHUNK_BYTES:
        populate(address, length)
        return
    share = -(-length // threads)
    helpers = [
        threading.Thread(
            target=populate, args=(address + i * share, min(share, length - i * share))
        )
        for i in range(1, threads)
    ]
    for helper in helpers:
        helper.start()
    populate(address, share)
    for helper in helpers:
        helper.join()


class Prefaulter:
    """Populates a mapping's pages from a daemon thread; ``stop()`` interrupts it."""

    def __init__(
        self, address: int, size_bytes: int, limit_bytes: int | None = None, *, nice: int = 0
    ) -> None:
        self._nice = nice
        self._address = address
        self._size = size_bytes if limit_bytes is None else min(size_bytes, limit_bytes)
        self._stop = threading.Event()
        self.done = threading.Event()
        self.supported = _madvise is not None
        self._thread = threading.Thread(target=self._run, name="plasma-prefault", daemon=True)

    def start(self) -> Prefaulter:
        self._thread.start()
        return self

    def run_here(self) -> Prefaulter:
        """Populate now, on this thread and one helper, before returning."""
        if self.supported and self._size > 0:
            if populate(self._address, min(self._size, mmap.PAGESIZE)):
                populate_parallel(self._address, self._size)
            else:
                self.supported = False
        self.done.set()
        return self

    def _run(self) -> None:
        if self._nice:
            try:  # a per-thread nice value (Linux threads are tasks)
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), self._nice)
            except (AttributeError, OSError):
                pass
        try:
            offset = 0
            while offset < self._size and not self._stop.is_set() and self.supported:
                length = min(_PREFAULT_STEP_BYTES, self._size - offset)
                if _madvise(self._address + offset, length, MADV_POPULATE_WRITE) != 0:
                    # Old kernel (EINVAL) or out of memory: fall back to faulting lazily.
                    self.supported = False
                offset += length
        finally:
            self.done.set()

    def covers(self, end_offset: int) -> bool:
        """Whether ``[0, end_offset)`` has been populated already."""
        return self.done.is_set() and self.supported and end_offset <= self._size

    def wait(self, timeout_s: float | None = None) -> bool:
        return self.done.wait(timeout_s)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()
