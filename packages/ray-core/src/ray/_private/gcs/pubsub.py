"""``RedisGcs``'s pub/sub: one connection and one listener thread per client.

Redis forgets a connection's subscriptions when the connection drops (a Redis restart,
a cut network, ``CLIENT KILL``), and whatever is published before the subscriber is
subscribed again never reaches it. redis-py reconnects and re-subscribes every channel;
on top of that, each subscription may declare ``on_resync``, which the listener calls
after every reconnect once the server has acknowledged that channel's re-subscription.
A subscriber that follows a table re-reads its entries there: a change written before
the read is in it, and one written after is published after the re-subscription and
arrives as a message, so nothing falls in between.

The acknowledgement (Redis's ``subscribe`` reply) is the exact moment the channel is
live again, and it reaches the listener ahead of every message of the new connection,
so ``on_resync`` also runs before any of them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis
from redis.client import PubSub

logger = logging.getLogger(__name__)

Subscriber = Callable[[str, bytes], None]
Resync = Callable[[], None]

# Published by a subscriber to check its own subscription is live; dropped by everyone.
SUBSCRIBED_SENTINEL = b"\x00ray:subscription-check"

# The listener's read timeout. close() does not wait for it (it disconnects the
# connection, which ends the read at once), so it only bounds how often an idle
# listener wakes: at 100 idle workers on one machine a 50 ms poll cost 2% of a core.
_POLL_S = 1.0
_RECONNECT_PAUSE_S = 0.5  # between reconnect attempts while the server is down
_CONFIRM_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class _Subscription:
    callback: Subscriber
    on_resync: Resync | None


class _ReconnectingPubSub(PubSub):
    """redis-py's ``PubSub``, which re-subscribes every channel when its connection
    comes back (``on_connect``); ``reconnected`` hears of it before that happens."""

    def __init__(self, connection_pool, reconnected: Callable[[], None]):
        super().__init__(connection_pool)
        self._reconnected = reconnected

    def on_connect(self, connection) -> None:
        # Before the SUBSCRIBE commands go out, so no acknowledgement can come first.
        self._reconnected()
        super().on_connect(connection)


class RedisSubscriptions:
    """The channels one ``RedisGcs`` listens to, delivered on one listener thread."""

    def __init__(self, client: redis.Redis):
        self._redis = client
        self._pubsub: _ReconnectingPubSub | None = None
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()
        # Serializes subscribe/unsubscribe/close (the pub/sub object and the thread).
        self._lock = threading.Lock()
        # Guards the two below; never held across a Redis call (it is taken inside
        # redis-py's reconnect, which may run under redis-py's own lock).
        self._state_lock = threading.Lock()
        self._subs: dict[str, _Subscription] = {}
        # Channels re-subscribed on a new connection whose acknowledgement (and so
        # their on_resync) is still to come.
        self._resync_pending: set[str] = set()
        self._confirm: dict[str, threading.Event] = {}

    def subscribe(self, channel: str, callback: Subscriber, *, confirm: bool,
                  on_resync: Resync | None) -> None:
        """``confirm=True``: return only once the subscription is live. SUBSCRIBE goes
        out on the pub/sub connection and is acknowledged there asynchronously, so a
        table read right after it (on the other connection) could miss an update
        published in between ("read, then wait for news" would wait forever). We
        publish a sentinel on the channel until it comes back to us."""
        confirmed = threading.Event()
        with self._lock:
            with self._state_lock:
                self._subs[channel] = _Subscription(callback, on_resync)
                self._confirm[channel] = confirmed
            if self._pubsub is None:
                self._pubsub = _ReconnectingPubSub(self._redis.connection_pool,
                                                   self._reconnected)
                self._pubsub.subscribe(**{channel: self._on_message})
                self._stopped.clear()
                self._thread = threading.Thread(target=self._listen, daemon=True,
                                                name="ray-gcs-pubsub")
                self._thread.start()
            else:
                self._pubsub.subscribe(**{channel: self._on_message})
        if not confirm or threading.current_thread() is self._thread:
            with self._state_lock:  # (from a callback: nobody else could confirm)
                self._confirm.pop(channel, None)
            return
        deadline = time.monotonic() + _CONFIRM_TIMEOUT_S
        wait_s = 0.002
        while time.monotonic() < deadline:
            self._redis.publish(channel, SUBSCRIBED_SENTINEL)
            if confirmed.wait(wait_s):
                return
            wait_s = min(wait_s * 2, 0.2)
        logger.warning("subscription to %s not confirmed within %.0f s", channel,
                       _CONFIRM_TIMEOUT_S)

    def unsubscribe(self, channel: str) -> None:
        with self._lock:
            with self._state_lock:
                self._subs.pop(channel, None)
                self._resync_pending.discard(channel)
            if self._pubsub is not None:
                self._pubsub.unsubscribe(channel)

    def close(self) -> None:
        with self._lock:
            self._stopped.set()
            pubsub = self._pubsub
            if pubsub is not None and pubsub.connection is not None \
                    and self._thread is not threading.current_thread():
                try:  # ends the listener's read now instead of at its poll timeout
                    pubsub.connection.disconnect()
                except Exception:  # noqa: BLE001 - closing: the connection may be broken
                    pass
            if self._thread is not None and self._thread is not threading.current_thread():
                self._thread.join(timeout=1)
            self._thread = None
            if self._pubsub is not None:
                try:
                    self._pubsub.close()
                except Exception:  # noqa: BLE001 - closing: the connection may be broken
                    pass
                self._pubsub = None

    # -- the listener thread -------------------------------------------------------------
    def _listen(self) -> None:
        pubsub = self._pubsub
        assert pubsub is not None
        while not self._stopped.is_set():
            try:
                message = pubsub.get_message(timeout=_POLL_S)
            except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
                # Redis went away. Keep listening: a later read reconnects, redis-py
                # re-subscribes every channel and _reconnected marks them for resync.
                logger.debug("GCS pub/sub lost its connection (%s); reconnecting", exc)
                self._stopped.wait(_RECONNECT_PAUSE_S)
                continue
            except Exception as exc:  # noqa: BLE001 - no way to go on; say so unless closing
                if not self._stopped.is_set():
                    logger.warning("GCS pub/sub listener stopped: %r; this process hears "
                                   "no more GCS notifications", exc)
                return
            if message is not None and message["type"] == "subscribe":
                self._acknowledged(message["channel"].decode())

    def _reconnected(self) -> None:
        with self._state_lock:
            self._resync_pending = {channel for channel, sub in self._subs.items()
                                    if sub.on_resync is not None}

    def _acknowledged(self, channel: str) -> None:
        with self._state_lock:
            if channel not in self._resync_pending:
                return
            self._resync_pending.discard(channel)
            sub = self._subs.get(channel)
        if sub is None or sub.on_resync is None:
            return
        try:
            sub.on_resync()
        except Exception:
            # Its table read failed: Redis is down again, so this connection drops too
            # and the next reconnect resyncs again.
            logger.exception("resync of %s after a GCS reconnect failed", channel)

    def _on_message(self, message) -> None:
        channel = message["channel"].decode()
        if message["data"] == SUBSCRIBED_SENTINEL:  # another subscriber's confirmation
            with self._state_lock:
                confirmed = self._confirm.pop(channel, None)
            if confirmed is not None:
                confirmed.set()
            return
        sub = self._subs.get(channel)
        if sub is not None:
            try:
                sub.callback(channel, message["data"])
            except Exception:
                logger.exception("subscriber of %s failed", channel)


__all__ = ["RedisSubscriptions", "Resync", "Subscriber"]
