"""Distinct id types: jobs, tasks, objects, actors, nodes and workers.

Object ids are 20 bytes, the size plasma uses: the 16-byte id of the task that
creates the object followed by a 4-byte little-endian index (return values count
from 1; ``ray.put`` objects set the top bit). Task ids are a per-process random
prefix plus a counter, which is cheap to generate and unique across the cluster;
``object_id_seed`` makes the prefix deterministic.
"""

from __future__ import annotations

import itertools
import os
import random
import struct
import threading

_PUT_FLAG = 0x80000000


class BaseID:
    """An immutable id of a fixed number of bytes."""

    __slots__ = ("_bytes", "_hash")
    SIZE = 0

    def __init__(self, id_bytes: bytes):
        if type(id_bytes) is not bytes or len(id_bytes) != self.SIZE:
            raise ValueError(
                f"{type(self).__name__} needs exactly {self.SIZE} bytes, got {id_bytes!r:.60}"
            )
        self._bytes = id_bytes
        self._hash = hash(id_bytes)

    @classmethod
    def from_random(cls):
        return cls(os.urandom(cls.SIZE))

    @classmethod
    def from_hex(cls, hex_id: str):
        return cls(bytes.fromhex(hex_id))

    @classmethod
    def nil(cls):
        return cls(b"\xff" * cls.SIZE)

    def is_nil(self) -> bool:
        return self._bytes == b"\xff" * self.SIZE

    def binary(self) -> bytes:
        return self._bytes

    def hex(self) -> str:
        return self._bytes.hex()

    def __eq__(self, other):
        return type(other) is type(self) and other._bytes == self._bytes

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"{type(self).__name__}({self.hex()})"

    def __reduce__(self):
        return type(self), (self._bytes,)


class JobID(BaseID):
    __slots__ = ()
    SIZE = 4

    @classmethod
    def from_int(cls, value: int) -> JobID:
        return cls(struct.pack("<I", value))

    def int(self) -> int:
        return struct.unpack("<I", self._bytes)[0]


class TaskID(BaseID):
    __slots__ = ()
    SIZE = 16

    @property
    def job_id(self) -> JobID:
        """The job that created the task (its id's first bytes)."""
        return JobID(self._bytes[:JobID.SIZE])


class ActorID(BaseID):
    """An actor's id: the id of its creation task."""

    __slots__ = ()
    SIZE = 16

    @property
    def job_id(self) -> JobID:
        """The job that created the actor."""
        return JobID(self._bytes[:JobID.SIZE])


class NodeID(BaseID):
    __slots__ = ()
    SIZE = 20


class WorkerID(BaseID):
    __slots__ = ()
    SIZE = 20


class FunctionID(BaseID):
    __slots__ = ()
    SIZE = 20


def object_id_bytes(task_id: bytes, index: int) -> bytes:
    return task_id + struct.pack("<I", index)


def task_id_of(object_id: bytes) -> bytes:
    return object_id[:16]


def object_index_of(object_id: bytes) -> int:
    return struct.unpack("<I", object_id[16:])[0]


def is_put_object(object_id: bytes) -> bool:
    return bool(object_index_of(object_id) & _PUT_FLAG)


class IdGenerator:
    """Generates task ids: 8 bytes of process prefix + 8-byte counter.

    The prefix embeds the job id so ids are readable per job; it is random per
    process unless a seed is given (``ray.init(object_id_seed=...)``).
    """

    def __init__(self, job_id: JobID, seed: int | None = None):
        rng = random.Random(seed) if seed is not None else random.SystemRandom()
        self._prefix = job_id.binary() + bytes(rng.getrandbits(8) for _ in range(4))
        self._counter = itertools.count(1)
        self._put_counter = itertools.count(1)
        self._lock = threading.Lock()

    def next_task_id(self) -> bytes:
        return self._prefix + next(self._counter).to_bytes(8, "little")

    def next_put_id(self, current_task_id: bytes) -> bytes:
        # Puts share the id space of the task that makes them; the flag keeps
        # them apart from the task's return values.
        return current_task_id + struct.pack("<I", _PUT_FLAG | next(self._put_counter))
