"""The global control store: cluster state in a Redis-protocol server.

``GcsClient`` is the interface; ``RedisGcs`` talks to valkey/redis and
``InMemoryGcs`` serves unit tests. Every key and channel name is built in
``keys``.
"""

from ray._private.gcs.client import GcsClient, InMemoryGcs, RedisGcs, connect

__all__ = ["GcsClient", "InMemoryGcs", "RedisGcs", "connect"]
