"""GCS client interface with a Redis implementation and an in-memory one."""

from __future__ import annotations

import abc
import fnmatch
import functools
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable

import msgpack

from ray._private import tls
from ray._private.gcs import keys
from ray.exceptions import AuthenticationError, GcsUnavailableError, RayConnectionError

logger = logging.getLogger(__name__)

Subscriber = Callable[[str, bytes], None]
Resync = Callable[[], None]


def _pack(obj) -> bytes:
    return msgpack.packb(obj, use_bin_type=True)


def _unpack(data: bytes):
    return msgpack.unpackb(data, raw=False, strict_map_key=False)


class GcsClient(abc.ABC):
    """The storage operations the runtime needs; values are bytes unless noted."""

    # raw primitives ------------------------------------------------------
    @abc.abstractmethod
    def get(self, key: str) -> bytes | None: ...

    @abc.abstractmethod
    def set(self, key: str, value: bytes, *, only_if_absent: bool = False) -> bool: ...

    @abc.abstractmethod
    def delete(self, key: str) -> bool: ...

    @abc.abstractmethod
    def scan(self, pattern: str) -> list[str]: ...

    @abc.abstractmethod
    def hset(self, key: str, field: str, value: bytes) -> None: ...

    @abc.abstractmethod
    def hget(self, key: str, field: str) -> bytes | None: ...

    @abc.abstractmethod
    def hgetall(self, key: str) -> dict[str, bytes]: ...

    @abc.abstractmethod
    def hdel(self, key: str, field: str) -> None: ...

    @abc.abstractmethod
    def rpush(self, key: str, value: bytes, *, max_len: int | None = None) -> None: ...

    @abc.abstractmethod
    def rpush_many(self, key: str, values: list[bytes], *, max_len: int | None = None) -> None:
        """Append ``values`` in order in one round trip, then keep the newest ``max_len``."""

    @abc.abstractmethod
    def llen(self, key: str) -> int: ...

    @abc.abstractmethod
    def lrange(self, key: str, start: int = 0, end: int = -1) -> list[bytes]: ...

    @abc.abstractmethod
    def incr(self, key: str) -> int: ...

    @abc.abstractmethod
    def publish(self, channel: str, message: bytes) -> int:
        """Send to every subscriber; returns how many subscribers received it."""

    @abc.abstractmethod
    def subscribe(self, channel: str, callback: Subscriber, confirm: bool = False, *,
                  on_resync: Resync | None = None) -> None:
        """Deliver ``channel``'s messages to ``callback`` (one callback per channel).

        ``confirm=True``: return only once the subscription is live, so that a table
        read made next cannot miss a change published after it ("subscribe, then read").

        ``on_resync``: messages published while the subscription is down are lost (the
        pub/sub connection dropped: a Redis restart, a cut network). After each
        reconnect, once the channel is live again, ``on_resync()`` runs on the thread
        that delivers messages, before any message of the new connection: a subscriber
        that follows a table re-reads its entries there, as it did after subscribing.
        """

    @abc.abstractmethod
    def unsubscribe(self, channel: str) -> None: ...

    @abc.abstractmethod
    def close(self) -> None: ...

    # sharded tables ------------------------------------------------------
    # Append-heavy tables (profile events, error logs) spread over the extra Redis
    # shards of `ray start --num-redis-shards`; one process writes to one shard, and
    # readers concatenate all of them. Without shards these are rpush/lrange.
    def sharded_rpush(self, key: str, value: bytes, *, max_len: int | None = None) -> None:
        self.rpush(key, value, max_len=max_len)

    def sharded_lrange(self, key: str, start: int = 0) -> list[bytes]:
        """Every shard's ``lrange(key, start, -1)``, concatenated (``start=-n``: tails)."""
        return self.lrange(key, start, -1)

    # typed helpers -------------------------------------------------------
    def hset_obj(self, key: str, field: str, obj) -> None:
        self.hset(key, field, _pack(obj))

    def hget_obj(self, key: str, field: str):
        raw = self.hget(key, field)
        return None if raw is None else _unpack(raw)

    def hgetall_obj(self, key: str) -> dict:
        return {k: _unpack(v) for k, v in self.hgetall(key).items()}

    def publish_obj(self, channel: str, obj) -> int:
        return self.publish(channel, _pack(obj))

    def subscribe_obj(self, channel: str, callback: Callable[[str, object], None],
                      confirm: bool = False, *, on_resync: Resync | None = None) -> None:
        self.subscribe(channel, lambda ch, data: callback(ch, _unpack(data)), confirm=confirm,
                       on_resync=on_resync)


def redis_client(host: str, port: int, password: str | None, timeout_s: float):
    """A redis-py client of the GCS (the main connection, the shards): the one place their
    options are set. With ``RAY_USE_TLS`` on, every connection runs mutual TLS through
    ``tls.client_context()``: this process's certificate, only the cluster CA trusted, host
    names not checked (as on every other TLS connection: see ``tls``). Not redis-py's own
    ``ssl=True``: that builds each connection's context from ``ssl.create_default_context()``,
    which also trusts every CA of the system (any publicly certified server would pass for
    the GCS) and costs ~40 ms per connection to load here."""
    import redis
    from redis.backoff import ExponentialWithJitterBackoff
    from redis.retry import Retry

    options: dict = {"host": host, "port": port, "password": password,
                     "socket_connect_timeout": timeout_s, "health_check_interval": 0,
                     # What redis.Redis() itself sets (from_pool sets nothing, and a pool's
                     # connections then never retry): a command rides through a short
                     # Redis restart instead of failing at once.
                     "retry": Retry(ExponentialWithJitterBackoff(base=0.01, cap=1), 10)}
    if tls.config() is not None:
        tls.check()  # a missing or unreadable file: fail naming the variable
        options["connection_class"] = _tls_connection_class()
    return redis.Redis.from_pool(redis.ConnectionPool(**options))


@functools.cache
def _tls_connection_class():
    from redis.connection import Connection

    class TlsConnection(Connection):
        """A redis-py connection that runs ``tls.client_context()`` over its socket."""

        def _connect(self):
            sock = super()._connect()
            try:
                return tls.client_context().wrap_socket(sock)
            except OSError:  # ssl.SSLError too: redis-py reports it as a ConnectionError
                sock.close()
                raise

    return TlsConnection


class RedisGcs(GcsClient):
    """The GCS on a Redis-protocol server (valkey by default)."""

    def __init__(self, host: str, port: int, password: str | None = None, timeout_s=10.0):
        import redis

        self.address = f"{host}:{port}"
        self._password = password
        self._redis = redis_client(host, port, password, timeout_s)
        deadline = time.monotonic() + timeout_s
        probed = False
        while True:
            try:
                self._redis.ping()
                break
            except redis.AuthenticationError as exc:
                if not self._password:
                    raise self._secret_missing() from None
                raise AuthenticationError(
                    f"Redis at {self.address} rejected the cluster secret ({exc}). Pass the "
                    "one `ray start --head` printed: ray.init(redis_password=...), "
                    "ray start --redis-password=... or $RAY_REDIS_PASSWORD."
                ) from None
            except redis.ResponseError as exc:
                if "NOAUTH" in str(exc) or "AUTH" in str(exc):
                    raise self._secret_missing() from None
                raise
            except (redis.ConnectionError, OSError) as exc:
                mismatch = None if probed else _tls_mismatch(host, port, exc)
                probed = True  # once: the probe costs a connection (and a timeout)
                if mismatch is not None:
                    raise mismatch from None
                if time.monotonic() > deadline:
                    raise RayConnectionError(
                        f"Cannot reach the GCS (Redis) at {self.address}: {exc}. Is the "
                        "head node running (ray start --head) and is the address right?"
                    ) from None
                time.sleep(0.05)
        from ray._private.gcs.pubsub import RedisSubscriptions

        self._subscriptions = RedisSubscriptions(self._redis)
        self._shards = None  # loaded on first use
        self._timeout_s = timeout_s

    def _secret_missing(self) -> AuthenticationError:
        return AuthenticationError(
            f"Redis at {self.address} requires the cluster secret, and none was found for it "
            "on this machine: pass the one `ray start --head` printed "
            "(ray.init(redis_password=...), ray start --redis-password=... or "
            "$RAY_REDIS_PASSWORD)."
        )

    def _shard_clients(self) -> list:
        if self._shards is None:
            import json
            import os


            raw = self._redis.get(keys.REDIS_SHARDS)
            addresses = json.loads(raw) if raw else []
            clients = []
            for address in addresses:
                host, _, port = address.rpartition(":")
                clients.append(redis_client(host, int(port), self._password, self._timeout_s))
            self._shards = clients
            self._my_shard = clients[os.getpid() % len(clients)] if clients else None
        return self._shards

    def sharded_rpush(self, key, value, *, max_len=None):
        if not self._shard_clients():
            return self.rpush(key, value, max_len=max_len)
        pipe = self._my_shard.pipeline(transaction=False)
        pipe.rpush(key, value)
        if max_len is not None:
            pipe.ltrim(key, -max_len, -1)
        pipe.execute()

    def sharded_lrange(self, key, start=0):
        out = list(self._redis.lrange(key, start, -1))
        for shard in self._shard_clients():
            out.extend(shard.lrange(key, start, -1))
        return out

    def get(self, key):
        return self._redis.get(key)

    def set(self, key, value, *, only_if_absent=False):
        return bool(self._redis.set(key, value, nx=only_if_absent))

    def delete(self, key):
        return bool(self._redis.delete(key))

    def scan(self, pattern):
        return [k.decode() for k in self._redis.scan_iter(match=pattern, count=1000)]

    def hset(self, key, field, value):
        self._redis.hset(key, field, value)

    def hget(self, key, field):
        return self._redis.hget(key, field)

    def hgetall(self, key):
        return {k.decode(): v for k, v in self._redis.hgetall(key).items()}

    def hdel(self, key, field):
        self._redis.hdel(key, field)

    def rpush(self, key, value, *, max_len=None):
        if max_len is None:
            self._redis.rpush(key, value)
        else:
            pipe = self._redis.pipeline(transaction=False)
            pipe.rpush(key, value)
            pipe.ltrim(key, -max_len, -1)
            pipe.execute()

    def rpush_many(self, key, values, *, max_len=None):
        if not values:
            return
        pipe = self._redis.pipeline(transaction=False)
        pipe.rpush(key, *values)
        if max_len is not None:
            pipe.ltrim(key, -max_len, -1)
        pipe.execute()

    def llen(self, key):
        return int(self._redis.llen(key))

    def lrange(self, key, start=0, end=-1):
        return self._redis.lrange(key, start, end)

    def incr(self, key):
        return int(self._redis.incr(key))

    def publish(self, channel, message):
        return int(self._redis.publish(channel, message))

    def subscribe(self, channel, callback, confirm=False, *, on_resync=None):
        self._subscriptions.subscribe(channel, callback, confirm=confirm, on_resync=on_resync)

    def unsubscribe(self, channel):
        self._subscriptions.unsubscribe(channel)

    def close(self):
        self._subscriptions.close()
        try:
            self._redis.close()
        except Exception:  # noqa: BLE001 - closing: the connection may be broken
            pass
        for shard in self._shards or ():
            try:
                shard.close()
            except Exception:  # noqa: BLE001 - closing: the connection may be broken
                pass


def _tls_mismatch(host: str, port: int, exc: BaseException) -> AuthenticationError | None:
    """The error to raise at once when the GCS and this process disagree on TLS (or our
    certificate is refused), instead of retrying until the connect deadline."""
    text = str(exc)
    if tls.config() is not None:
        # redis-py reports a failed handshake as a ConnectionError with ssl's reason in it.
        if "SSL" in text or "certificate" in text.lower():
            return AuthenticationError(
                f"TLS handshake with the GCS (Redis) at {host}:{port} failed ({exc}): "
                f"{tls.USE_ENV} is on here, so the GCS must run with TLS too, and both "
                f"ends need certificates signed by the CA in {tls.CA_ENV}")
        return None
    refused = isinstance(exc, ConnectionRefusedError) or "refused" in text.lower()
    if not refused and tls.speaks_tls(host, port):
        return AuthenticationError(
            f"The GCS (Redis) at {host}:{port} requires TLS but this process has "
            f"{tls.USE_ENV} off: set {tls.USE_ENV}=1 with {tls.CERT_ENV}, {tls.KEY_ENV} "
            f"and {tls.CA_ENV} as on the head node")
    return None


def _gcs_unavailable(exc: Exception, address: str) -> Exception | None:
    """The error to raise for a Redis failure, or None when ``exc`` is not one."""
    import redis

    if isinstance(exc, redis.AuthenticationError) or not isinstance(
        exc, redis.ConnectionError | redis.TimeoutError
    ):
        return None
    return GcsUnavailableError(
        f"The GCS (Redis) at {address} is not answering ({exc}). If the head node is "
        "restarting, retry in a moment: nodes and drivers reconnect by themselves. If its "
        "Redis restarted without `ray start --head --redis-persist`, the cluster's state is "
        "gone: restart the cluster (ray stop; ray start --head ...)."
    )


def _translate_redis_errors(method):
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:
            error = _gcs_unavailable(exc, self.address)
            if error is None:
                raise
            raise error from exc

    return wrapper


# Every public GCS call says "the GCS is unavailable" in ray's terms, not redis-py's.
for _name, _method in list(vars(RedisGcs).items()):
    if callable(_method) and not _name.startswith("_") and _name != "close":
        setattr(RedisGcs, _name, _translate_redis_errors(_method))


class InMemoryGcs(GcsClient):
    """A process-local GCS with the same semantics, for unit tests."""

    def __init__(self):
        self._data: dict[str, object] = {}
        self._subs: dict[str, list[Subscriber]] = defaultdict(list)
        self._lock = threading.RLock()

    def get(self, key):
        return self._data.get(key)

    def set(self, key, value, *, only_if_absent=False):
        with self._lock:
            if only_if_absent and key in self._data:
                return False
            self._data[key] = value
            return True

    def delete(self, key):
        return self._data.pop(key, None) is not None

    def scan(self, pattern):
        return [k for k in list(self._data) if fnmatch.fnmatchcase(k, pattern)]

    def hset(self, key, field, value):
        with self._lock:
            self._data.setdefault(key, {})[field] = value

    def hget(self, key, field):
        return self._data.get(key, {}).get(field)

    def hgetall(self, key):
        return dict(self._data.get(key, {}))

    def hdel(self, key, field):
        self._data.get(key, {}).pop(field, None)

    def rpush(self, key, value, *, max_len=None):
        with self._lock:
            lst = self._data.setdefault(key, [])
            lst.append(value)
            if max_len is not None and len(lst) > max_len:
                del lst[: len(lst) - max_len]

    def rpush_many(self, key, values, *, max_len=None):
        with self._lock:
            lst = self._data.setdefault(key, [])
            lst.extend(values)
            if max_len is not None and len(lst) > max_len:
                del lst[: len(lst) - max_len]

    def llen(self, key):
        return len(self._data.get(key, []))

    def lrange(self, key, start=0, end=-1):
        lst = self._data.get(key, [])
        return lst[start:] if end == -1 else lst[start : end + 1]

    def incr(self, key):
        with self._lock:
            self._data[key] = int(self._data.get(key, 0)) + 1
            return self._data[key]

    def publish(self, channel, message):
        subscribers = list(self._subs.get(channel, ()))
        for cb in subscribers:
            cb(channel, message)
        return len(subscribers)

    def subscribe(self, channel, callback, confirm=False, *, on_resync=None):
        # In-process: live at once, and never down, so there is nothing to resync.
        self._subs[channel].append(callback)

    def unsubscribe(self, channel):
        self._subs.pop(channel, None)

    def close(self):
        self._subs.clear()


def connect(address: str, password: str | None = None, timeout_s: float = 10.0) -> RedisGcs:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"GCS address must look like 'host:port', got {address!r}")
    if password is None:
        from ray._private import auth

        password = auth.resolve_secret(address, None)
    return RedisGcs(host, int(port), password, timeout_s)


__all__ = ["GcsClient", "InMemoryGcs", "RedisGcs", "connect", "keys"]
