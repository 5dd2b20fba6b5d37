"""A GCS hash read again only when its version counter moved.

Tables that many readers poll and few writers change (the node table: every raylet's
heartbeat, every driver's ``ray.cluster_resources()``) carry a counter their writers
bump after each write (``bump_version``). A reader holding a ``VersionedTable`` pays
one GET of the counter per read while nothing changed, instead of the whole table.
"""

from __future__ import annotations


class VersionedTable:
    """A GCS hash as last read, read again only when its version counter moved (or
    ``refresh_s`` after the last read). Writers bump the counter after writing, so a
    read that sees the new version also sees the write."""

    def __init__(self, table: str, version_key: str, refresh_s: float):
        self._table = table
        self._version_key = version_key
        self._refresh_s = refresh_s
        self._value: dict | None = None
        self._version: bytes | None = None
        self._read_at = 0.0
        self.reads = 0  # full reads so far (tests, benchmarks)

    def read(self, gcs, now: float) -> dict:
        version = gcs.get(self._version_key)
        if (self._value is None or version is None or version != self._version
                or now - self._read_at >= self._refresh_s):
            self._value = gcs.hgetall_obj(self._table)
            self._version, self._read_at = version, now
            self.reads += 1
        return self._value

    def invalidate(self) -> None:
        self._value = None


def bump_version(gcs, version_key: str) -> None:
    """After writing a table that a :class:`VersionedTable` caches."""
    gcs.incr(version_key)
