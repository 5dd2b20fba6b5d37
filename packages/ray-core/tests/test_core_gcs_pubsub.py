"""The GCS client's pub/sub on a real valkey server: after its connection is cut
(CLIENT KILL) or the server restarts, each subscription's ``on_resync`` runs once the
channel is live again, so a subscriber re-reading its table there sees the change whose
message was lost, and nothing published afterwards is missed."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest

from ray._private.gcs import connect
from ray._private.node import find_redis_server, free_port


class _Valkey:
    def __init__(self):
        self.port = free_port("127.0.0.1")
        self.address = f"127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [find_redis_server(), "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--loglevel", "warning"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def restart(self) -> None:
        self.kill()
        self.start()


@pytest.fixture
def valkey():
    server = _Valkey()
    server.start()
    yield server
    server.kill()


@pytest.fixture
def clients(valkey):
    """A subscriber and a writer, each its own GcsClient (as two processes would be)."""
    subscriber, writer = connect(valkey.address), connect(valkey.address)
    yield subscriber, writer
    subscriber.close()
    writer.close()


class _Recorder:
    """Records messages and resyncs in order; each resync reads the table, then
    publishes, so a message published from it shows the channel was live by then."""

    def __init__(self, writer):
        self.writer = writer
        self.events: list[tuple] = []
        self.changed = threading.Condition()

    def on_message(self, _channel, data) -> None:
        self._add(("message", data))

    def on_resync(self) -> None:
        self._add(("resync", self.writer.get("state")))
        self.writer.publish("state", b"published by on_resync")

    def _add(self, event) -> None:
        with self.changed:
            self.events.append(event)
            self.changed.notify_all()

    def wait_for(self, event, timeout_s: float = 10.0) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: event in self.events, timeout_s), self.events


@pytest.mark.parametrize("cut", ["client_kill", "restart"])
def test_on_resync_reads_the_change_whose_message_was_lost(valkey, clients,
                                                          deaf_subscriptions, cut):
    subscriber, writer = clients
    recorder = _Recorder(writer)
    subscriber.subscribe("state", recorder.on_message, confirm=True,
                         on_resync=recorder.on_resync)
    writer.set("state", b"1")
    writer.publish("state", b"1")
    recorder.wait_for(("message", b"1"))

    with deaf_subscriptions(subscriber, cut=valkey.restart if cut == "restart" else None):
        writer.set("state", b"2")
        assert writer.publish("state", b"2") == 0  # nobody heard it

    recorder.wait_for(("message", b"published by on_resync"))
    assert recorder.events == [("message", b"1"), ("resync", b"2"),
                               ("message", b"published by on_resync")]


def test_on_resync_runs_only_after_a_reconnect_and_only_for_live_subscriptions(
        clients, deaf_subscriptions):
    subscriber, writer = clients
    resyncs: list[str] = []
    arrived = threading.Event()
    subscriber.subscribe("kept", lambda _c, _d: arrived.set(), confirm=True,
                         on_resync=lambda: resyncs.append("kept"))
    subscriber.subscribe("dropped", lambda _c, _d: None, confirm=True,
                         on_resync=lambda: resyncs.append("dropped"))
    subscriber.subscribe("plain", lambda _c, _d: None, confirm=True)
    writer.publish("kept", b"x")
    assert arrived.wait(10)
    assert resyncs == []  # subscribing is not a reconnect
    subscriber.unsubscribe("dropped")

    with deaf_subscriptions(subscriber):
        pass

    deadline = time.monotonic() + 10
    while not resyncs and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)  # any other resync would have run by now
    assert resyncs == ["kept"]


def test_an_idle_listener_sleeps_and_close_ends_it_at_once(clients):
    """The listener reads with a long timeout (an idle process wakes about once a
    second for it), and close() does not wait that timeout out: it disconnects."""
    from ray._private.gcs import pubsub

    subscriber, writer = clients
    arrived = threading.Event()
    subscriber.subscribe("idle", lambda _c, _d: arrived.set(), confirm=True)
    writer.publish("idle", b"x")
    assert arrived.wait(10)
    assert pubsub._POLL_S >= 0.5
    listener = next(t for t in threading.enumerate() if t.name == "ray-gcs-pubsub")
    time.sleep(0.1)  # the listener is back in its read
    t0 = time.monotonic()
    subscriber.close()
    closed_s = time.monotonic() - t0
    listener.join(2)
    assert not listener.is_alive()
    assert closed_s < 0.3, f"close() took {closed_s:.2f} s"
