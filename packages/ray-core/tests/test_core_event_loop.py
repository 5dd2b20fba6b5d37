"""The I/O loop of drivers and workers (``ray._private.event_loop``): a thread that waits
runs the loop itself (no hand-off), the I/O thread takes over when that thread is busy,
and nothing is lost between the two. Real sockets and threads; no cluster."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time

import msgpack
import pytest

from ray._private import event_loop, rpc
from ray._private.event_loop import LoopQueue, WaitLock
from ray._private.transport import EventLoop


class Echo:
    """The far end of a socket pair: answers each ``ping`` with ``pong`` (same args),
    from a plain blocking thread, optionally after a delay."""

    def __init__(self, sock: socket.socket, delay_s: float = 0.0):
        self.sock = sock
        self.delay_s = delay_s
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        unpacker = msgpack.Unpacker(raw=False)
        while True:
            try:
                data = self.sock.recv(1 << 20)
            except OSError:
                return
            if not data:
                return
            unpacker.feed(data)
            for msg in unpacker:
                if self.delay_s:
                    time.sleep(self.delay_s)
                self.sock.sendall(msgpack.packb([rpc.ONEWAY, "pong", msg[2]],
                                                use_bin_type=True))

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def loop():
    lp = EventLoop(name="test-io")
    lp.start()
    yield lp
    lp.stop()


def connect(loop: EventLoop, handlers: dict, delay_s: float = 0.0):
    ours, theirs = socket.socketpair()
    echo = Echo(theirs, delay_s)
    conn = loop.add_connection(ours, lambda write: rpc.RpcPeer(write, handlers, name="test"))
    return conn, echo


def test_waiting_thread_runs_the_handler_that_completes_its_wait(loop):
    ran_on: list[int] = []
    box: dict = {}

    def pong(peer, i):
        ran_on.append(threading.get_ident())
        box["lock"].release()

    # The reply comes while this thread sleeps in epoll_wait: epoll wakes its most
    # recent waiter, this thread, which runs the handler itself.
    conn, echo = connect(loop, {"pong": pong}, delay_s=0.005)
    for i in range(20):
        box["lock"] = lock = WaitLock(loop)
        conn.peer.notify("ping", i)
        assert lock.acquire(timeout=10)
    # (The first may go to the I/O thread: it can enter epoll_wait after this thread,
    # right after registering the connection.)
    assert ran_on[1:] == [threading.get_ident()] * 19
    echo.close()


def test_reply_that_beats_the_waiter_back_still_goes_to_it(loop, monkeypatch):
    monkeypatch.setattr(event_loop, "_GRACE_S", 5.0)  # (2 ms; long here, for a loaded CI)
    ran_on: list[int] = []
    box: dict = {}

    def pong(peer, i):
        ran_on.append(threading.get_ident())
        box["lock"].release()

    conn, echo = connect(loop, {"pong": pong})
    warm_up = WaitLock(loop)
    threading.Timer(0.01, warm_up.release).start()
    assert warm_up.acquire(timeout=5)  # this thread has waited on the loop once
    for i in range(20):
        box["lock"] = lock = WaitLock(loop)
        conn.peer.notify("ping", i)
        time.sleep(0.002)  # "still submitting" when the reply arrives
        assert lock.acquire(timeout=10)
    # The I/O thread, still in epoll_wait, takes the first early reply; from then on it
    # stays out of epoll_wait while this thread keeps coming back to wait, so it no
    # longer takes replies (to hand them over) even when they come early.
    assert ran_on[1:] == [threading.get_ident()] * 19
    echo.close()


def test_wait_completed_on_another_thread_wakes_the_waiter(loop):
    lock = WaitLock(loop)
    threading.Timer(0.05, lock.release).start()
    t0 = time.monotonic()
    assert lock.acquire(timeout=5)
    assert time.monotonic() - t0 < 2


def test_wait_times_out(loop):
    lock = WaitLock(loop)
    t0 = time.monotonic()
    assert lock.acquire(timeout=0.05) is False
    assert 0.04 < time.monotonic() - t0 < 2
    lock.release()  # a late release is harmless
    assert lock.acquire(timeout=0)


def test_second_waiting_thread_falls_back_to_a_lock(loop):
    first, second = WaitLock(loop), WaitLock(loop)
    results: dict = {}

    def wait_first():
        results["first"] = first.acquire(timeout=10)

    t = threading.Thread(target=wait_first)
    t.start()
    deadline = time.monotonic() + 5
    while loop._borrower is None and time.monotonic() < deadline:
        time.sleep(0.001)
    assert loop._borrower == t.ident  # the first one borrows the loop
    loop.call_soon(second.release)  # the I/O thread or the borrower runs it
    assert second.acquire(timeout=5)  # this thread could not borrow: a plain lock
    loop.call_soon(first.release)
    t.join(5)
    assert results["first"] is True


def test_timers_and_calls_run_while_a_thread_waits(loop):
    fired = threading.Event()
    called = []
    loop.call_later(0.02, fired.set)
    lock = WaitLock(loop)
    threading.Timer(0.01, lambda: loop.call_soon(called.append, 1)).start()
    threading.Timer(0.2, lock.release).start()
    assert lock.acquire(timeout=5)
    assert fired.is_set() and called == [1]


def test_io_thread_takes_over_from_a_busy_thread(loop):
    ran_on: list[int] = []
    got = threading.Event()

    def pong(peer, i):
        ran_on.append(threading.get_ident())
        got.set()

    conn, echo = connect(loop, {"pong": pong})
    conn.peer.notify("ping", 1)
    time.sleep(0.1)  # busy (not waiting on the loop) past the grace period
    assert got.wait(5)
    assert ran_on == [loop._thread.ident]
    echo.close()


def test_loop_queue_get_runs_the_filling_handler_on_the_getter(loop):
    q = LoopQueue(loop)
    ran_on: list[int] = []

    def pong(peer, i):
        ran_on.append(threading.get_ident())
        q.put(i)

    conn, echo = connect(loop, {"pong": pong}, delay_s=0.005)
    for i in range(20):
        conn.peer.notify("ping", i)
        assert q.get() == i
    # (The first may go to the I/O thread: it can enter epoll_wait after this thread,
    # right after registering the connection.)
    assert ran_on[1:] == [threading.get_ident()] * 19
    threading.Timer(0.05, q.put, args=("from another thread",)).start()
    assert q.get() == "from another thread"
    assert q.empty()
    echo.close()


def _interrupt_the_first_of_three(loop) -> bool:
    """Three messages in one read while this thread borrows the loop; the first handler
    raises KeyboardInterrupt when it runs on this thread. False when the I/O thread took
    the read instead (it was still in epoll_wait): nothing was interrupted then."""
    me = threading.get_ident()
    seen: list[int] = []
    box: dict = {}

    def pong(peer, i):
        if i == 0 and not seen:
            seen.append(-1)
            if threading.get_ident() == me:
                raise KeyboardInterrupt  # what ray.cancel's or Ctrl-C's handler raises
            box["io"] = True
        else:
            seen.append(i)
        if i == 2:
            box["lock"].release()

    ours, theirs = socket.socketpair()
    conn = loop.add_connection(ours, lambda write: rpc.RpcPeer(write, {"pong": pong}))
    three = b"".join(msgpack.packb([rpc.ONEWAY, "pong", [i]]) for i in range(3))

    def send():
        loop._io_wake.signal()  # out of epoll_wait: it parks while this thread borrows
        time.sleep(0.02)
        theirs.sendall(three)

    threading.Timer(0.05, send).start()
    box["lock"] = lock = WaitLock(loop)
    try:
        interrupted = False
        try:
            assert lock.acquire(timeout=5)
        except KeyboardInterrupt:
            interrupted = True
            assert lock.acquire(timeout=5)  # the rest arrive though no new bytes come
        assert seen == [-1, 1, 2]
        assert interrupted != box.get("io", False)
        return interrupted
    finally:
        theirs.close()
        conn.close()


def test_messages_after_an_interrupted_handler_are_still_delivered(loop):
    # Which poller takes a read is up to the kernel; retry until this thread took it.
    assert any(_interrupt_the_first_of_three(loop) for _ in range(10))


def test_a_message_larger_than_the_read_buffer_arrives_whole(loop):
    box: dict = {}

    def pong(peer, blob):
        box["got"] = blob
        box["lock"].release()

    conn, echo = connect(loop, {"pong": pong})
    blob = bytes(range(256)) * (3 * 4096 + 7)  # ~3 MiB: several edge-triggered reads
    box["lock"] = lock = WaitLock(loop)
    conn.peer.notify("ping", blob)
    assert lock.acquire(timeout=10)
    assert box["got"] == blob
    echo.close()


def test_a_close_right_behind_the_last_message_is_noticed(loop):
    # The peer's last message and its end (FIN) arrive together while a handler runs:
    # one edge-triggered event for both, and a short read that returns the message does
    # not show the end yet; the loop must read on and notice it.
    closed = threading.Event()
    got: list[str] = []

    def slow(peer):
        got.append("slow")
        time.sleep(0.3)  # the last message and the close arrive meanwhile

    ours, theirs = socket.socketpair()
    loop.add_connection(ours, lambda write: rpc.RpcPeer(
        write, {"slow": slow, "last": lambda peer: got.append("last")},
        on_close=lambda peer: closed.set()))
    theirs.sendall(msgpack.packb([rpc.ONEWAY, "slow", []]))
    time.sleep(0.1)
    theirs.sendall(msgpack.packb([rpc.ONEWAY, "last", []]))
    theirs.close()
    assert closed.wait(5)
    assert got == ["slow", "last"]


def test_stop_releases_a_waiting_thread(loop):
    got: dict = {}

    def wait():
        got["result"] = loop.wait_until(lambda: False, timeout_s=10)

    t = threading.Thread(target=wait)
    t.start()
    deadline = time.monotonic() + 5
    while loop._borrower is None and time.monotonic() < deadline:
        time.sleep(0.001)
    loop.stop()
    t.join(5)
    assert not t.is_alive() and got["result"] is None


def test_a_thread_inside_a_handler_cannot_borrow(loop):
    answer: dict = {}
    done = threading.Event()

    def probe():
        answer["nested"] = loop.wait_until(lambda: True)
        done.set()

    loop.call_soon(probe)
    assert done.wait(5)
    assert answer["nested"] is None  # handlers must not block; they get no loop to run


class _CountingEpoll:
    """The loop's epoll set, counting the sleeping polls (timeout != 0) one thread makes."""

    def __init__(self, ep, thread_id: int):
        self._ep = ep
        self._thread_id = thread_id
        self.sleeps = 0

    def poll(self, timeout=-1, maxevents=-1):
        if timeout != 0 and threading.get_ident() == self._thread_id:
            self.sleeps += 1
        return self._ep.poll(timeout, maxevents)

    def __getattr__(self, name):
        return getattr(self._ep, name)


_FEEDER = """
import socket, sys, time
import msgpack
sock = socket.socket(fileno=int(sys.argv[1]))
time.sleep(0.15)  # past the first spin_s of the borrow
for i in range(int(sys.argv[2])):
    sock.sendall(msgpack.packb([3, "tick", [i]], use_bin_type=True))  # rpc.ONEWAY
    time.sleep(0.01)  # well inside spin_s, far longer than one poll
"""


def test_a_borrower_keeps_polling_after_each_round_of_events():
    """A long wait fed by a steady stream (the results of a chain of tasks) polls again
    for ``spin_s`` after every message it handled, so the senders never wake it from
    ``epoll_wait``: the borrowing thread enters a sleeping poll about once, not once per
    message."""
    loop = EventLoop(name="test-io", spin_s=0.05)
    loop.start()
    ours, theirs = socket.socketpair()
    got: list[int] = []
    conn = loop.add_connection(ours, lambda write: rpc.RpcPeer(
        write, {"tick": lambda peer, i: got.append(i)}, name="test"))
    counting = loop._ep = _CountingEpoll(loop._ep, threading.get_ident())
    n = 20
    feeder = subprocess.Popen([sys.executable, "-c", _FEEDER, str(theirs.fileno()), str(n)],
                              pass_fds=[theirs.fileno()])
    try:
        assert loop.wait_until(lambda: len(got) == n, timeout_s=20) is True
        assert feeder.wait(timeout=20) == 0
        assert got == list(range(n))
        # (a sleep per message, as when only a borrow's first spin_s polled, is >= n)
        assert counting.sleeps < n // 2, counting.sleeps
    finally:
        conn.close()
        theirs.close()
        loop.stop()


def test_when_done_never_runs_a_callback_inline_off_the_loop(loop):
    """A reply that completed before its callback was attached (another thread handled
    it) is delivered on the loop, not inside the caller, which may hold its own lock;
    one that completes later runs in the handler that completes it."""
    held = threading.RLock()
    ran: list[tuple[bool, bool]] = []  # (on the loop, caller's lock held by this thread)
    arrived = threading.Event()

    def record(_future) -> None:
        ran.append((loop.in_loop_thread(), held._is_owned()))
        arrived.set()

    done = rpc.Future()
    done.set_result(1)
    with held:
        loop.when_done(done, record)
        assert ran == []  # not inline
    assert arrived.wait(5)
    assert ran == [(True, False)]

    arrived.clear()
    later = rpc.Future()
    loop.when_done(later, record)
    loop.call_soon(later.set_result, 2)  # completed by a handler on the loop
    assert arrived.wait(5)
    assert ran[-1] == (True, False)
