"""0.7 Async API: turn an ObjectRef into an asyncio future."""

from __future__ import annotations

import asyncio


def init() -> None:
    """Kept for 0.7 compatibility: nothing needs initializing."""


def as_future(object_ref) -> asyncio.Future:
    """An asyncio future that resolves to the object's value (await it in a coroutine)."""
    return asyncio.wrap_future(object_ref.future())


def shutdown() -> None:
    """Kept for 0.7 compatibility."""
