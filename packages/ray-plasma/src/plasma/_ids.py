"""Object ids: 20 opaque bytes, the key of every object in the store."""

from __future__ import annotations

import os

ID_SIZE = 20


class ObjectID:
    """A 20-byte object id.

    ``ObjectID(b)`` wraps 20 raw bytes; ``from_random()`` draws a fresh one and
    ``nil()`` is the all-ones id Ray uses for "no object".
    """

    __slots__ = ("_bytes", "_hash")

    def __init__(self, binary: bytes) -> None:
        if not isinstance(binary, bytes | bytearray | memoryview):
            raise TypeError(f"ObjectID needs {ID_SIZE} bytes, got {type(binary).__name__}")
        binary = bytes(binary)
        if len(binary) != ID_SIZE:
            raise ValueError(f"ObjectID needs exactly {ID_SIZE} bytes, got {len(binary)}")
        self._bytes = binary
        self._hash = hash(binary)

    @classmethod
    def from_random(cls) -> ObjectID:
        return cls(os.urandom(ID_SIZE))

    @classmethod
    def from_hex(cls, hex_id: str) -> ObjectID:
        return cls(bytes.fromhex(hex_id))

    @classmethod
    def nil(cls) -> ObjectID:
        return cls(b"\xff" * ID_SIZE)

    def is_nil(self) -> bool:
        return self._bytes == b"\xff" * ID_SIZE

    def binary(self) -> bytes:
        return self._bytes

    def hex(self) -> str:
        return self._bytes.hex()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ObjectID) and other._bytes == self._bytes

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"ObjectID({self.hex()})"

    def __reduce__(self):
        return (ObjectID, (self._bytes,))


def as_key(object_id: ObjectID | bytes) -> bytes:
    """The raw 20-byte key of an ``ObjectID`` (or of raw bytes, checked)."""
    if isinstance(object_id, ObjectID):
        return object_id._bytes
    if isinstance(object_id, bytes) and len(object_id) == ID_SIZE:
        return object_id
    raise TypeError(f"expected a plasma.ObjectID or {ID_SIZE} bytes, got {object_id!r}")
