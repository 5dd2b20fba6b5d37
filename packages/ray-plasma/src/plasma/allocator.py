"""A best-fit allocator over one contiguous arena, with coalescing free lists.

Pure bookkeeping (no memory is touched): ``allocate`` returns an offset, ``free``
gives an extent back and merges it with free neighbours, so that after every
extent is freed the arena is again one free extent.

Free extents are indexed three ways:

* ``_free_by_start``: start -> size, to find the right-hand neighbour on free;
* ``_free_by_end``: end -> start, to find the left-hand neighbour on free;
* ``_free_sorted``: sorted ``(size, start)`` pairs, for best fit by bisection
  (the smallest extent that fits, lowest address first among equals).
"""

from __future__ import annotations

import bisect

ALIGNMENT = 64


def align_up(num_bytes: int, alignment: int = ALIGNMENT) -> int:
    return (num_bytes + alignment - 1) // alignment * alignment


class Allocator:
    """Allocates ``ALIGNMENT``-aligned extents inside ``[0, capacity_bytes)``."""

    def __init__(self, capacity_bytes: int) -> None:
        usable = capacity_bytes // ALIGNMENT * ALIGNMENT
        if usable <= 0:
            raise ValueError(f"arena capacity must be at least {ALIGNMENT} bytes")
        self.capacity_bytes = usable
        self.allocated_bytes = 0
        self._allocated: dict[int, int] = {}
        self._free_by_start: dict[int, int] = {}
        self._free_by_end: dict[int, int] = {}
        self._free_sorted: list[tuple[int, int]] = []
        self._add_free(0, usable)

    @staticmethod
    def extent_size(num_bytes: int) -> int:
        """How many arena bytes an object of ``num_bytes`` occupies (never 0)."""
        return align_up(max(num_bytes, 1))

    def allocate(self, num_bytes: int) -> int | None:
        """Offset of a fresh extent for ``num_bytes``, or None when no free extent fits."""
        size = self.extent_size(num_bytes)
        index = bisect.bisect_left(self._free_sorted, (size, -1))
        if index == len(self._free_sorted):
            return None
        free_size, start = self._free_sorted[index]
        self._remove_free(start, free_size, index)
        if free_size > size:
            self._add_free(start + size, free_size - size)
        self._allocated[start] = size
        self.allocated_bytes += size
        return start

    def free(self, offset: int) -> int:
        """Give back the extent at ``offset``; returns its size."""
        size = self._allocated.pop(offset, None)
        if size is None:
            raise ValueError(f"free of offset {offset}, which is not allocated")
        self.allocated_bytes -= size
        start, end = offset, offset + size
        left_start = self._free_by_end.get(start)
        if left_start is not None:
            self._remove_free(left_start, start - left_start)
            start = left_start
        right_size = self._free_by_start.get(end)
        if right_size is not None:
            self._remove_free(end, right_size)
            end += right_size
        self._add_free(start, end - start)
        return size

    def largest_free_extent(self) -> int:
        return self._free_sorted[-1][0] if self._free_sorted else 0

    def free_extents(self) -> list[tuple[int, int]]:
        """``(start, size)`` of every free extent, by address (for tests and debugging)."""
        return sorted(self._free_by_start.items())

    def allocated_extents(self) -> list[tuple[int, int]]:
        return sorted(self._allocated.items())

    def _add_free(self, start: int, size: int) -> None:
        self._free_by_start[start] = size
        self._free_by_end[start + size] = start
        bisect.insort(self._free_sorted, (size, start))

    def _remove_free(self, start: int, size: int, index: int | None = None) -> None:
        del self._free_by_start[start]
        del self._free_by_end[start + size]
        if index is None:
            index = bisect.bisect_left(self._free_sorted, (size, start))
        del self._free_sorted[index]
