"""``Prefetcher``: runs an execution in a helper thread and hands its blocks over in
order through a bounded queue, so the next blocks are fetched while the caller
works on the current one (``iter_batches(prefetch_batches=)``)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any

import ray
from ray.data import _executor


class Prefetcher:
    """Runs a bundle stream in a helper thread, fetching blocks into a bounded queue;
    iterating yields the blocks in order. Closing it (or an error) stops the thread."""

    _END = object()

    def __init__(self, run: _executor.Execution, depth: int):
        self._run = run
        self._stream = iter(run)
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, name="ray.data prefetch", daemon=True)
        self._thread.start()

    def _produce(self) -> None:
        try:
            for bundle in self._stream:
                block = ray.get(bundle.block_ref)
                del bundle
                if not self._put(block):
                    return
                del block
            self._put(self._END)
        except BaseException as error:  # noqa: BLE001 - handed to the consuming thread, raised there
            self._put(error)
        finally:
            self._stream.close()

    def _put(self, item) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def __iter__(self) -> Iterator[Any]:
        try:
            while True:
                item = self._queue.get()
                if item is self._END:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
                del item
        finally:
            # The helper may be waiting for tasks: cancelling makes it notice within
            # a poll interval, so an interrupted consumer (an error, a timeout, an
            # early break) is never stuck here behind a task that does not finish.
            self._stop.set()
            self._run.cancel()
            self._thread.join()
