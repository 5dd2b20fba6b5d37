"""Helpers to run a store in-process for tests and tools.

``with running_store(64 * 2**20) as (store, socket_path): ...`` runs a
``PlasmaStore`` on its own event loop in a background thread and stops it
(unlinking the socket, unmapping the arena) on exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
import threading

from plasma.store import PlasmaStore


class StoreThread:
    """A ``PlasmaStore`` served from a private event loop in a daemon thread."""

    def __init__(self, capacity_bytes: int, socket_path: str | None = None, **store_options):
        self._tmpdir = None
        if socket_path is None:
            self._tmpdir = tempfile.mkdtemp(prefix="plasma-")
            socket_path = os.path.join(self._tmpdir, "store.sock")
        self.socket_path = socket_path
        self.store = PlasmaStore(capacity_bytes, **store_options)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="plasma-store", daemon=True
        )

    def start(self) -> StoreThread:
        self._thread.start()
        self.call(self.store.start(self.socket_path))
        return self

    def call(self, coroutine, timeout_s: float = 30.0):
        """Run a coroutine on the store's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout_s)

    def run(self, function, *args):
        """Run a plain function on the store's loop thread and wait for its result."""

        async def wrapper():
            return function(*args)

        return self.call(wrapper())

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        try:
            self.call(self.store.stop())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()
            if self._tmpdir is not None:
                shutil.rmtree(self._tmpdir, ignore_errors=True)


@contextlib.contextmanager
def running_store(capacity_bytes: int, **store_options):
    """Yield ``(store, socket_path)`` of a store running in a background thread."""
    runner = StoreThread(capacity_bytes, **store_options).start()
    try:
        yield runner.store, runner.socket_path
    finally:
        runner.stop()
