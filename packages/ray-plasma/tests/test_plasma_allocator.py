"""The arena allocator: best fit, alignment, coalescing (unit and property tests)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plasma.allocator import ALIGNMENT, Allocator


def test_allocations_are_aligned_and_disjoint():
    allocator = Allocator(4096)
    offsets = [allocator.allocate(size) for size in (1, 100, 64, 0)]
    assert offsets == [0, 64, 192, 256]
    assert all(offset % ALIGNMENT == 0 for offset in offsets)
    assert allocator.allocated_bytes == 64 + 128 + 64 + 64


def test_allocate_returns_none_when_nothing_fits():
    allocator = Allocator(256)
    assert allocator.allocate(150) == 0  # rounded up to 192 bytes
    assert allocator.allocate(100) is None
    assert allocator.allocate(50) == 192  # the 64-byte tail
    assert allocator.allocate(1) is None


def test_free_coalesces_neighbours_back_into_one_extent():
    allocator = Allocator(1024)
    a, b, c = (allocator.allocate(256) for _ in range(3))
    allocator.free(a)
    allocator.free(c)
    assert allocator.free_extents() == [(0, 256), (512, 512)]
    allocator.free(b)
    assert allocator.free_extents() == [(0, 1024)]
    assert allocator.allocated_bytes == 0


def test_best_fit_prefers_the_smallest_hole():
    allocator = Allocator(4096)
    blocks = [allocator.allocate(size) for size in (512, 64, 128, 64, 1024)]
    allocator.free(blocks[0])  # 512-byte hole at 0
    allocator.free(blocks[2])  # 128-byte hole
    assert allocator.allocate(100) == blocks[2]


def test_double_free_is_rejected():
    allocator = Allocator(1024)
    offset = allocator.allocate(10)
    allocator.free(offset)
    with pytest.raises(ValueError, match="not allocated"):
        allocator.free(offset)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("alloc"), st.integers(0, 5000)),
            st.tuples(st.just("free"), st.integers(0, 1000)),
        ),
        max_size=120,
    )
)
def test_extents_never_overlap_and_everything_returns_to_free(operations):
    capacity = 64 * 1024
    allocator = Allocator(capacity)
    live: dict[int, int] = {}
    for op, value in operations:
        if op == "alloc":
            offset = allocator.allocate(value)
            if offset is not None:
                assert offset % ALIGNMENT == 0
                live[offset] = Allocator.extent_size(value)
        elif live:
            offset = sorted(live)[value % len(live)]
            allocator.free(offset)
            del live[offset]
        extents = sorted(
            [(start, size, "used") for start, size in live.items()]
            + [(start, size, "free") for start, size in allocator.free_extents()]
        )
        position = 0
        for start, size, _kind in extents:  # used + free tile the arena exactly
            assert start == position, extents
            position += size
        assert position == capacity
        free = allocator.free_extents()
        for (start, size), (next_start, _) in zip(free, free[1:]):
            assert start + size < next_start  # free neighbours are always merged
    for offset in list(live):
        allocator.free(offset)
    assert allocator.free_extents() == [(0, capacity)]
    assert allocator.allocated_bytes == 0
