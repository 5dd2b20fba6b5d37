"""``ray.types.ObjectRef[T]``: a generic name for annotating refs, as in Ray 2.x.

    def produce() -> ray.types.ObjectRef[int]: ...

It is for type annotations only (as in Ray): the refs ray returns are
``ray.ObjectRef`` instances.
"""

from typing import Generic, TypeVar

T = TypeVar("T")


class ObjectRef(Generic[T]):
    """An ObjectRef whose value has type ``T`` (annotations only)."""


__all__ = ["ObjectRef"]
