"""The I/O loop of drivers and workers: epoll over non-blocking sockets, timers and
thread-safe calls, which a waiting thread may run itself.

One daemon thread (the I/O thread) runs the loop while the process's other threads are
busy. A thread about to block for something the loop will deliver (``ray.get`` waiting
for a task's result, a worker's main thread waiting for its next task) does not sleep
on a lock for the I/O thread to release: it *borrows* the loop (``wait_until``),
sleeping in ``epoll_wait`` on the same epoll set and running the handlers itself when a
socket becomes readable. epoll wakes its most recent waiter first (the wait queue is
LIFO), so the reply goes straight to the thread that waits for it: a synchronous round
trip costs one wake-up per process and no thread hand-off (two hand-offs used to cost
about a third of a ``ray.get(f.remote())`` on this machine, and made its rate depend on
the scheduler's mood).

Invariants:

* Handlers, calls and timers run under the dispatch lock, by whichever thread polled
  (one at a time, so handlers never run concurrently); ``in_loop_thread`` is true for
  the thread that holds it. Timers run on the I/O thread only.
* Descriptors are registered edge-triggered (``EPOLLET``): each readiness change is
  handed to one poller (level-triggered epoll would wake the second waiter for the same
  event), so readers drain what is there (a ``Connection`` reads until a short read).
* One thread at a time borrows the loop; others wait the classic way (``WaitLock``
  falls back to a lock that whoever completes the wait releases). A completer on
  another thread interrupts the borrower's ``epoll_wait`` through the borrower's eventfd,
  and the borrower re-checks its condition after every wake-up.
* While a thread borrows, and for ``_GRACE_S`` after it stopped, the I/O thread stays
  out of ``epoll_wait`` (it parks on an Event until then, or until a timer is due or a
  call is queued). Otherwise, woken by a reply that arrived a moment before the waiting
  thread got back to ``epoll_wait`` (it was still submitting, or preempted), it would take
  the reply and hand it over: the very hand-off borrowing removes. So a thread that
  waits again and again (a loop of synchronous calls, a worker's stream of tasks) handles
  all its traffic, and the I/O thread takes over once that thread has been busy for
  longer than the grace period. It never enters ``epoll_wait`` after a borrower did (it
  would then be the most recent waiter and take the borrower's events).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import queue
import select
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

_RECV_BYTES = 1 << 20
_MAX_EVENTS = 256
_IN = select.EPOLLIN | select.EPOLLRDHUP | select.EPOLLET
_IN_OUT = _IN | select.EPOLLOUT
_READABLE = select.EPOLLIN | select.EPOLLRDHUP | select.EPOLLHUP | select.EPOLLERR
_ENDED = select.EPOLLRDHUP | select.EPOLLHUP  # the peer closed: its end is queued
_OUT = select.EPOLLOUT
_INF = float("inf")
# How long after a thread stopped borrowing the I/O thread leaves events to it.
_GRACE_S = 0.002
# While one borrow goes on, the I/O thread checks back after 2, 4, 8 ... ms, up to this.
_MAX_PARK_S = 0.128


class _Wake:
    """An eventfd that interrupts one poller's ``epoll_wait``. ``sleeping``: its
    poller is in (or about to enter) ``epoll_wait``; set before the poller's last
    check of its condition, so a completer either sees it set or is seen."""

    __slots__ = ("fd", "sleeping")

    def __init__(self) -> None:
        self.fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self.sleeping = False

    def signal(self) -> None:
        # Edge-triggered: every write is a new event, so the counter is never drained.
        try:
            os.eventfd_write(self.fd, 1)
        except OSError:  # closed by stop(): nobody is left to wake
            pass


class _Listener:
    __slots__ = ("sock", "on_accept")

    def __init__(self, sock, on_accept: Callable) -> None:
        self.sock = sock
        self.on_accept = on_accept


class EventLoop:
    """epoll loop on its own daemon thread, with timers, thread-safe ``call_soon`` and
    loop borrowing (``wait_until``, ``WaitLock``, ``LoopQueue``).

    ``spin_s``: a thread that borrows the loop polls (``epoll_wait(0)``, yielding the CPU
    between polls) for the first ``spin_s`` of each wait and after each round of events
    it handled, before it sleeps. The I/O thread never spins: it handles traffic while
    the process's other threads are busy, and a poll loop there would take the GIL from
    them at every poll (with it, the actor worker's main thread lost about a fifth of
    its throughput). The runtime sets it from ``io_spin_us`` (500 µs)."""

    def __init__(self, name: str = "ray-io", spin_s: float = 0.0):
        self._spin_s = spin_s
        self._ep = select.epoll()
        self._fds: dict[int, Any] = {}  # fd -> Connection | _Listener | _Wake
        self._rbuf = bytearray(_RECV_BYTES)
        self._rview = memoryview(self._rbuf)
        self._io_wake = _Wake()
        self._borrow_wake = _Wake()
        for wake in (self._io_wake, self._borrow_wake):
            self._fds[wake.fd] = wake
            self._ep.register(wake.fd, _IN)
        self._dispatch = threading.Lock()
        self._owner: int | None = None  # the thread running handlers (holds _dispatch)
        self._borrow_slot = threading.Lock()
        self._borrower: int | None = None
        # deque: append/popleft are atomic, so call_soon takes no lock (it may run in an
        # ObjectRef.__del__ at any allocation, even inside our own code).
        self._calls: deque = deque()
        self._timers: list = []  # heap of [deadline, seq, fn, args, cancelled]
        self._timer_seq = itertools.count()
        self._io_deadline = _INF  # when the I/O thread wakes up next for a timer
        # The I/O thread parks (waits on _unpark until _io_park_until) while a thread
        # borrows or just did (see _park_time).
        self._io_parked = False
        self._io_park_until = 0.0
        self._unpark = threading.Event()
        self._borrows = 0  # borrows started so far
        self._borrows_seen = 0
        self._borrow_ended = -_INF
        self._park_s = _GRACE_S
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._listeners: dict[int, _Listener] = {}

    def start(self) -> None:
        self._thread.start()

    def in_loop_thread(self) -> bool:
        """Whether the calling thread is running the loop's handlers right now."""
        return self._owner == threading.get_ident()

    def when_done(self, future, fn: Callable) -> None:
        """Call ``fn(future)`` on the loop once ``future`` (an RPC reply) is done: inside
        the handler that completes it, or, when another thread completed it before this
        call, as a queued call. Never inline in the calling thread off the loop, which
        may hold its own locks (a submitter dispatching under its lock got a lease grant
        re-entrantly that way, and pushed tasks while holding it)."""

        def done(f) -> None:
            if self.in_loop_thread():
                fn(f)
            else:
                self.call_soon(fn, f)

        future.add_done_callback(done)

    # -- calls and timers --------------------------------------------------------
    def call_soon(self, fn: Callable, *args) -> None:
        self._calls.append((fn, args))
        if self._owner != threading.get_ident():
            self._wake_any()

    def _wake_any(self) -> None:
        if self._io_wake.sleeping:
            self._io_wake.signal()
        elif self._borrow_wake.sleeping:
            self._borrow_wake.signal()
        elif self._io_parked:
            self._unpark.set()
        # else: whoever is running handlers looks at the calls before it sleeps

    def call_later(self, delay_s: float, fn: Callable, *args) -> list:
        """Run ``fn`` on the loop thread after ``delay_s``; returns a handle for cancel()."""
        handle = [time.monotonic() + delay_s, next(self._timer_seq), fn, args, False]
        self.call_soon(self._add_timer, handle)
        return handle

    @staticmethod
    def cancel(handle: list) -> None:
        handle[4] = True

    def _add_timer(self, handle: list) -> None:
        heapq.heappush(self._timers, handle)
        if handle[0] < self._io_deadline and threading.get_ident() != self._thread.ident:
            self._rouse_io()  # the I/O thread sleeps past it: make it look again

    def _rouse_io(self) -> None:
        if self._io_parked:
            self._unpark.set()
        else:
            self._io_wake.signal()

    def _next_timeout(self) -> float:
        """Seconds until the first live timer (-1: none). Cancelled timers at the top
        go now: each idle lease cancels one, and waking up for them was most of what an
        idle-but-busy process's I/O thread did."""
        timers = self._timers
        while timers and timers[0][4]:
            heapq.heappop(timers)
        if not timers:
            return -1.0
        return max(0.0, timers[0][0] - time.monotonic())

    def _run_calls(self) -> None:
        calls = self._calls
        for _ in range(len(calls)):  # what calls add runs in the next round
            fn, args = calls.popleft()
            try:
                fn(*args)
            except Exception:
                logger.exception("callback %r failed", fn)

    def _run_timers(self) -> None:
        now = time.monotonic()
        timers = self._timers
        while timers and timers[0][0] <= now:
            _, _, fn, args, cancelled = heapq.heappop(timers)
            if cancelled:
                continue
            try:
                fn(*args)
            except Exception:
                logger.exception("timer %r failed", fn)

    # -- descriptors -------------------------------------------------------------
    def _register(self, conn) -> None:
        """Start reading ``conn`` (a transport.Connection: ``sock``, ``closed``, ``_out``,
        ``_on_readable``, ``_flush``)."""
        if conn.closed:
            return
        fd = conn.sock.fileno()
        self._fds[fd] = conn
        self._ep.register(fd, _IN_OUT if conn._out else _IN)

    def _want_write(self, conn) -> None:
        """Tell the loop ``conn`` has output waiting for room in the socket (any thread)."""
        if conn.closed:
            return
        try:
            self._ep.modify(conn.sock.fileno(), _IN_OUT)
        except (OSError, ValueError):  # not registered yet (_register looks at _out) or closed
            pass

    def _unregister(self, conn) -> None:
        """Forget ``conn``; called (on any thread) before its socket is closed."""
        fd = conn.sock.fileno()
        if fd < 0:
            return
        if self._fds.get(fd) is conn:
            del self._fds[fd]
        try:
            self._ep.unregister(fd)
        except (OSError, ValueError):  # never registered (closed before _register ran)
            pass

    def listen(self, sock, on_accept: Callable) -> None:
        sock.setblocking(False)
        listener = _Listener(sock, on_accept)
        self._listeners[sock.fileno()] = listener
        self._fds[sock.fileno()] = listener
        self._ep.register(sock.fileno(), _IN)

    def _accept(self, listener: _Listener) -> None:
        while True:  # edge-triggered: until none is waiting
            try:
                sock, _ = listener.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            try:
                listener.on_accept(sock)
            except Exception:
                logger.exception("accept handler failed")
                sock.close()

    # -- handling events (under _dispatch) ----------------------------------------
    def _handle(self, events: list, mine: _Wake) -> None:
        fds = self._fds
        for fd, mask in events:
            obj = fds.get(fd)
            if obj is None:
                continue
            kind = type(obj)
            if kind is _Wake:
                if obj is not mine:
                    self._pass_on(obj)
                continue
            if kind is _Listener:
                self._accept(obj)
                continue
            if mask & _OUT and obj._flush() and not obj.closed:
                try:
                    self._ep.modify(fd, _IN)
                except (OSError, ValueError):
                    pass
            if mask & _READABLE:
                # A peer that closed: its end comes after its last bytes, and a short read
                # of those does not show it (no later event would), so read until it does.
                ended = 3 if mask & _ENDED else 0
                while True:  # edge-triggered: drain (a full buffer may mean more)
                    obj.read_full = False
                    obj._on_readable()
                    if obj.closed:
                        break
                    if not obj.read_full:
                        if not ended:
                            break
                        ended -= 1

    def _pass_on(self, wake: _Wake) -> None:
        """This poller took the other poller's wake-up: hand it on if that one sleeps."""
        if wake is self._borrow_wake:
            if wake.sleeping:
                wake.signal()
        elif self._stopping:  # the I/O thread's: calls run here anyway; timers are its own
            self._rouse_io()

    # -- the I/O thread ------------------------------------------------------------
    def _run(self) -> None:
        me = threading.get_ident()
        mine = self._io_wake
        ep = self._ep
        events: list = []
        while not self._stopping:
            with self._dispatch:
                self._owner = me
                try:
                    if events:
                        self._handle(events, mine)
                    self._run_calls()
                    self._run_timers()
                finally:
                    self._owner = None
                park_s = self._park_time()
                # The flags go up before the last look at the calls (see call_soon).
                if park_s < 0:
                    mine.sleeping = True
                else:
                    self._unpark.clear()
                    self._io_parked = True
                timeout = 0.0 if self._calls else self._next_timeout()
                now = time.monotonic()
                self._io_deadline = _INF if timeout < 0 else now + timeout
                if park_s >= 0 and timeout >= 0:
                    park_s = min(park_s, timeout)
                self._io_park_until = now + park_s
            events = []
            if park_s >= 0:
                if park_s > 0:
                    self._unpark.wait(park_s)
                self._io_parked = False
                continue
            try:
                events = ep.poll(timeout, _MAX_EVENTS)
            except (OSError, ValueError):  # ValueError: the epoll was closed (stop)
                if self._stopping:
                    break
                raise
            finally:
                mine.sleeping = False
        self._io_deadline = _INF

    def _park_time(self) -> float:
        """How long the I/O thread stays out of epoll_wait (-1: it does not). A borrow
        going on: 2 ms, doubling while the same borrow lasts (a long ray.get costs a few
        wake-ups, and the borrower rouses it when it leaves); else what is left of the
        grace period since the last borrow ended."""
        borrows = self._borrows
        if self._borrower is not None:
            if borrows == self._borrows_seen:
                self._park_s = min(self._park_s * 2, _MAX_PARK_S)
            else:
                self._park_s = _GRACE_S
            self._borrows_seen = borrows
            return self._park_s
        self._borrows_seen = borrows
        self._park_s = _GRACE_S
        left = self._borrow_ended + _GRACE_S - time.monotonic()
        return left if left > 0 else -1.0

    # -- borrowing -------------------------------------------------------------------
    def wait_until(self, is_done: Callable[[], bool], timeout_s: float | None = None
                   ) -> bool | None:
        """Run the loop on this thread until ``is_done()`` (True) or ``timeout_s`` passes
        (False). None when this thread cannot borrow the loop (another thread does, this
        one is running handlers, or the loop stopped): wait another way then.

        Whoever makes ``is_done()`` true from another thread must call
        ``wake_borrower()`` afterwards."""
        me = threading.get_ident()
        if self._owner == me or self._stopping or me == self._thread.ident:
            return None
        if not self._borrow_slot.acquire(blocking=False):
            return None
        mine = self._borrow_wake
        ep = self._ep
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        # For ``spin_s`` after the borrow starts and after each round of events it
        # handled, the borrower polls without sleeping: a reply (or a worker's next
        # task, or the next result of a chain of tasks) that comes within it costs the
        # sender no wake-up of this thread, which on a VM is tens of microseconds inside
        # the sender's send(). A borrow with no traffic sleeps after ``spin_s``.
        spin_s = self._spin_s
        clock = time.perf_counter
        spin_until = clock() + spin_s if spin_s else 0.0
        self._borrower = me
        self._borrows += 1
        try:
            while True:
                if is_done():
                    return True
                timeout = -1.0
                if deadline is not None:
                    timeout = deadline - time.monotonic()
                    if timeout <= 0:
                        return False
                mine.sleeping = True
                if is_done():  # (completers look at ``sleeping`` after they complete)
                    return True
                if self._calls:
                    timeout = 0.0
                try:
                    if spin_until and timeout != 0:
                        events = self._borrow_poll(timeout, spin_until)
                    else:
                        events = ep.poll(timeout, _MAX_EVENTS)
                except (OSError, ValueError):  # ValueError: the epoll was closed (stop)
                    if self._stopping:
                        return None
                    raise
                finally:
                    mine.sleeping = False
                if self._stopping:
                    return None
                if events or self._calls:
                    self._dispatch_borrowed(events, mine, me)
                    if spin_s:
                        spin_until = clock() + spin_s
        finally:
            mine.sleeping = False
            self._borrower = None
            self._borrow_slot.release()
            now = self._borrow_ended = time.monotonic()
            # What this thread leaves behind is the I/O thread's: rouse it if it sleeps
            # past the grace period (a long park, or in epoll_wait past a due timer).
            if self._io_parked:
                if self._io_park_until > now + _GRACE_S:
                    self._unpark.set()
            elif self._calls or self._timers and self._timers[0][0] < self._io_deadline:
                self._io_wake.signal()

    def _borrow_poll(self, timeout: float, spin_until: float) -> list:
        """A borrower's poll: ``epoll_wait(0)`` (yielding the CPU between polls) until
        ``spin_until``, then a sleeping one for what is left of ``timeout``."""
        ep, clock = self._ep, time.perf_counter
        start = now = clock()
        while now < spin_until:
            events = ep.poll(0, _MAX_EVENTS)
            if events or self._calls:
                return events
            os.sched_yield()
            now = clock()
        return ep.poll(timeout if timeout < 0 else max(0.0, timeout - (now - start)),
                       _MAX_EVENTS)

    def _dispatch_borrowed(self, events: list, mine: _Wake, me: int) -> None:
        with self._dispatch:
            self._owner = me
            try:
                self._handle(events, mine)
                self._run_calls()
            except BaseException:
                # An asynchronous exception raised on this thread inside a handler
                # (KeyboardInterrupt, ray.cancel's interrupt): leave nothing behind
                # that edge-triggered epoll would not report again.
                self._recover_after_interrupt(events)
                raise
            finally:
                self._owner = None

    def _recover_after_interrupt(self, events: list) -> None:
        for fd, _ in events:
            obj = self._fds.get(fd)
            if obj is None or type(obj) is _Wake:
                continue
            try:  # re-arming re-reports what is still readable
                self._ep.modify(fd, _IN_OUT if getattr(obj, "_out", None) else _IN)
            except (OSError, ValueError):
                continue
            peer = getattr(obj, "peer", None)
            if peer is not None:  # messages already decoded but not dispatched
                self.call_soon(_refeed, obj)

    def wake_borrower(self) -> None:
        """Interrupt the borrowing thread's ``epoll_wait`` (its condition may now hold).
        Free when nobody borrows or the borrower itself calls it."""
        if self._borrow_wake.sleeping and self._borrower != threading.get_ident():
            self._borrow_wake.signal()

    # -- stopping ----------------------------------------------------------------------
    def stop(self) -> None:
        self._stopping = True
        self._io_wake.signal()
        self._unpark.set()
        self._borrow_wake.signal()
        if threading.get_ident() != self._thread.ident and self._thread.is_alive():
            self._thread.join(timeout=5)
        self._borrow_wake.signal()  # (the I/O thread may have taken the first one as it left)
        for listener in self._listeners.values():
            try:
                listener.sock.close()
            except OSError:
                pass
        if self._borrower is None:
            self._close_fds()
        # else: the borrower returns None at its next wake-up; the descriptors go with
        # the process (closing them under a sleeping epoll_wait would not wake it).

    def _close_fds(self) -> None:
        for fd in (self._io_wake.fd, self._borrow_wake.fd):
            try:
                os.close(fd)
            except OSError:
                pass
        self._ep.close()


def _refeed(conn) -> None:
    if conn.closed:
        return
    try:
        conn.peer.feed(b"")
    except Exception as exc:  # noqa: BLE001 - a malformed stream: logged, connection closed
        logger.warning("%s: bad data, closing: %s", conn.peer.name, exc)
        conn.close(f"protocol error: {exc}")


class WaitLock:
    """A one-shot lock, created held: ``release()`` from any thread, ``acquire(timeout)``
    borrows the loop while it waits (falls back to a plain lock when it cannot).
    A drop-in for the held ``threading.Lock`` a waiter blocks on."""

    __slots__ = ("_loop", "_released", "_lock")

    def __init__(self, loop: EventLoop):
        self._loop = loop
        self._released = False
        self._lock: threading.Lock | None = None

    def _is_released(self) -> bool:
        return self._released

    def release(self) -> None:
        self._released = True
        lock = self._lock
        if lock is not None:
            lock.release()
        self._loop.wake_borrower()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if self._released:
            return True
        if not blocking:
            return False
        got = self._loop.wait_until(self._is_released, None if timeout < 0 else timeout)
        if got is not None:
            return got
        lock = threading.Lock()
        lock.acquire()
        self._lock = lock
        if self._released:  # released before _lock was set: it saw None
            return True
        return lock.acquire(timeout=timeout)


class LoopQueue:
    """``queue.SimpleQueue``'s interface; ``get()`` borrows the loop while the queue is
    empty, so the handler that fills it runs on the thread that waits for it."""

    __slots__ = ("_loop", "_q", "_not_empty")

    def __init__(self, loop: EventLoop):
        self._loop = loop
        self._q: queue.SimpleQueue = queue.SimpleQueue()
        q = self._q
        self._not_empty = lambda: not q.empty()

    def put(self, item) -> None:
        self._q.put(item)
        self._loop.wake_borrower()

    def get(self):
        q = self._q
        if q.empty():
            self._loop.wait_until(self._not_empty)  # None: could not borrow; block below
        return q.get()

    def get_nowait(self):
        return self._q.get_nowait()

    def empty(self) -> bool:
        return self._q.empty()


__all__ = ["EventLoop", "LoopQueue", "WaitLock"]
