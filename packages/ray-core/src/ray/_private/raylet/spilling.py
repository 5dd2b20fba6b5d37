"""Object spilling: this node's primary copies, pinned in memory, moved to disk under
pressure, read back on demand, deleted when freed.

``LocalObjectManager`` (Ray's name for the same part) is the raylet's side of the
plasma store's ``ExternalStore`` hooks (``plasma.external``):

* Every object sealed in the store that is not a copy pulled from another node (nor
  one read back from disk) is a *primary copy*: the raylet pins it until its owner
  frees it, so LRU eviction only ever drops secondary copies.
* When primary copies take more than ``object_spilling_threshold`` of the store, or a
  create does not fit (the store asks ``make_room`` before it would raise
  ``ObjectStoreFullError``), the oldest primaries that nobody else is reading are
  written, several per file (at least ``min_spilling_size`` bytes or
  ``max_fused_object_count`` objects), to ``<directory>/ray_spilled_objects_<node id>/``
  on ``max_io_workers`` threads, then unpinned and dropped from memory.
* A ``get`` of a spilled object (a worker's ``ray.get``, a task's argument) makes the
  store call ``restore``: the object is read back into a fresh store object, which is
  an ordinary evictable copy (the file stays the durable one, so evicting it again
  costs no write). A pull from another node is served straight from the file
  (``sendfile``) without restoring it here.
* When the owner frees an object (or a client deletes it) its file entry goes; a
  file is deleted with its last object. Stopping the raylet removes its directory;
  a raylet that was killed leaves a record in ``<session>/spilled_objects/`` that
  ``ray stop`` and the driver's shutdown use to remove its files
  (``remove_orphaned_spill_dirs``).

Everything here runs on the raylet's event loop except file I/O, which runs on the
manager's thread pool. ``choose_spill_batch`` is pure.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import json
import logging
import os
import shutil
import struct
import time
import urllib.parse
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

import psutil

from plasma import ObjectExistsError, ObjectID, ObjectStoreFullError
from plasma.external import ExternalStore
from ray._private.config import parse_spilling_config

logger = logging.getLogger(__name__)

DEFAULT_OBJECT_PREFIX = "ray_spilled_objects"
RECORDS_DIR = "spilled_objects"  # under the session directory: one record per raylet
_RECORD_HEADER = struct.Struct("<20sQQ")  # object id, metadata bytes, data bytes
_POLL_S = 0.02
PULLED_PIN_GRACE_S = 2.0


# --- configuration (pure) -----------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class SpillConfig:
    """What the raylet needs to spill; built from the ``RayConfig`` fields of Ray's names."""

    directories: tuple[str, ...]
    buffer_size: int = -1
    threshold: float = 0.8
    min_spilling_size: int = 100 * 1024**2
    max_fused_object_count: int = 2000
    max_io_workers: int = 4
    oom_grace_period_s: float = 2.0

    @classmethod
    def from_ray_config(cls, config, session_dir: str) -> SpillConfig:
        directories: tuple[str, ...]
        if config.object_spilling_directory:
            directories, buffer_size = (config.object_spilling_directory,), -1
        else:
            directories, buffer_size = parse_spilling_config(config.object_spilling_config)
            directories = directories or (session_dir,)
        return cls(
            directories=directories,
            buffer_size=buffer_size,
            threshold=config.object_spilling_threshold,
            min_spilling_size=config.min_spilling_size,
            max_fused_object_count=config.max_fused_object_count,
            max_io_workers=config.max_io_workers,
            oom_grace_period_s=config.oom_grace_period_s,
        )


# --- decisions (pure) ---------------------------------------------------------------------
def choose_spill_batch(
    candidates: Iterable[tuple[bytes, int]], *, bytes_wanted: int, min_spilling_size: int,
    max_count: int,
) -> list[bytes]:
    """The objects to fuse into one file: candidates in order (oldest first) until the
    batch holds ``max(bytes_wanted, min_spilling_size)`` bytes or ``max_count`` objects."""
    target = max(bytes_wanted, min_spilling_size)
    batch: list[bytes] = []
    total = 0
    for key, size in candidates:
        if total >= target or len(batch) >= max_count:
            break
        batch.append(key)
        total += size
    return batch


@dataclasses.dataclass(frozen=True)
class SpilledCopy:
    """Where one object lives on disk: its record starts at ``record_offset`` (header,
    metadata, data), its data at ``data_offset``."""

    path: str
    record_offset: int
    data_offset: int
    data_size: int
    metadata: bytes

    @property
    def url(self) -> str:
        """Ray's form: ``<file>?offset=<record start>&size=<record bytes>``."""
        size = self.data_offset + self.data_size - self.record_offset
        return f"{self.path}?offset={self.record_offset}&size={size}"


def parse_spill_url(url: str) -> tuple[str, int, int]:
    """``(path, offset, size)`` of a ``SpilledCopy.url``."""
    parsed = urllib.parse.urlparse(url)
    query = urllib.parse.parse_qs(parsed.query)
    if "offset" not in query or "size" not in query:
        raise ValueError(f"not a spilled-object url: {url!r}")
    return url.split("?", 1)[0], int(query["offset"][0]), int(query["size"][0])


@dataclasses.dataclass
class SpillStats:
    spilled_bytes: int = 0
    spilled_objects: int = 0
    spill_time_s: float = 0.0  # summed over batches (concurrent batches overlap)
    restored_bytes: int = 0
    restored_objects: int = 0
    restore_time_s: float = 0.0
    files_deleted: int = 0

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


# --- file I/O (helper threads) --------------------------------------------------------------
def _write_spill_file(path: str, items: list, buffer_size: int) -> list[SpilledCopy]:
    """Write ``(key, data view, metadata)`` records into a new file; the data goes
    straight from shared memory to the file (no copy for objects above the buffer)."""
    copies = []
    offset = 0
    try:
        with open(path, "xb", buffering=buffer_size) as f:
            for key, view, metadata in items:
                f.write(_RECORD_HEADER.pack(key, len(metadata), len(view)))
                f.write(metadata)
                f.write(view)
                data_offset = offset + _RECORD_HEADER.size + len(metadata)
                copies.append(SpilledCopy(path, offset, data_offset, len(view), metadata))
                offset = data_offset + len(view)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    return copies


def _read_spilled(key: bytes, copy: SpilledCopy, buffer: memoryview) -> None:
    fd = os.open(copy.path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        header = os.pread(fd, _RECORD_HEADER.size, copy.record_offset)
        if len(header) != _RECORD_HEADER.size or _RECORD_HEADER.unpack(header) != (
            key, len(copy.metadata), copy.data_size
        ):
            raise OSError(f"spill file {copy.path} does not hold object {key.hex()} at "
                          f"offset {copy.record_offset} (corrupted or replaced)")
        with buffer.cast("B") as view:
            done = 0
            while done < copy.data_size:
                n = os.preadv(fd, [view[done:]], copy.data_offset + done)
                if n <= 0:
                    raise OSError(f"spill file {copy.path} ends before object {key.hex()} does")
                done += n
    finally:
        os.close(fd)


# --- the manager ------------------------------------------------------------------------------
class LocalObjectManager(ExternalStore):
    """This node's primary copies: pinned, spilled, restored and freed (see the module)."""

    def __init__(self, store, config: SpillConfig | None, node_id: str, session_dir: str):
        self.store = store
        self.config = config
        self.node_id = node_id
        self.session_dir = session_dir
        self.stats = SpillStats()
        # Pinned primaries in memory, oldest first: key -> data size.
        self.primaries: collections.OrderedDict[bytes, int] = collections.OrderedDict()
        self.primary_bytes = 0
        self.secondary: set[bytes] = set()  # copies pulled from other nodes (evictable)
        # Pulled copies still pinned for their requesters, who read them right after the
        # pull and then say so (``release_pulled``): key -> [pins, of them not yet
        # claimed by a requester, when the last came]. Pins older than PULLED_PIN_GRACE_S
        # go (a requester that died never says), checked at the next seal or when room
        # is needed; a free drops them all.
        self._pulled_pins: collections.OrderedDict[bytes, list] = collections.OrderedDict()
        self.spilled: dict[bytes, SpilledCopy] = {}
        self._file_objects: dict[str, int] = {}  # spill file -> objects still in it
        self._spilling: dict[bytes, int] = {}  # being written: key -> size
        self._batches: set[asyncio.Task] = set()
        self._restoring: dict[bytes, asyncio.Task] = {}
        self._restored_creates: set[bytes] = set()  # creates whose seal is not a primary
        self._stopped = False
        self._file_seq = 0
        self._directory_turn = 0
        self.directories: list[str] = []
        self._executor: ThreadPoolExecutor | None = None
        if config is not None:
            for parent in config.directories:
                name = f"{DEFAULT_OBJECT_PREFIX}_{node_id}"
                path = os.path.abspath(os.path.join(parent, name))
                os.makedirs(path, exist_ok=True)
                self.directories.append(path)
            self._executor = ThreadPoolExecutor(config.max_io_workers,
                                                thread_name_prefix="spill-io")
            self._write_record()
            store.set_external_store(self)

    @property
    def enabled(self) -> bool:
        return self.config is not None

    @property
    def _spill_config(self) -> SpillConfig:
        """The config of a manager that spills (only spilling paths read it)."""
        if self.config is None:
            raise RuntimeError("spilling is off on this node (automatic_object_spilling_enabled)")
        return self.config

    # -- primaries ---------------------------------------------------------------------------
    def object_sealed(self, key: bytes, data_size: int) -> None:
        """The store sealed ``key``: pin it as a primary copy unless it is a pulled or
        restored copy; spill if primaries now pass the threshold."""
        if self._pulled_pins:  # pulled copies read by now become evictable
            self._release_pulled(PULLED_PIN_GRACE_S)
        if key in self.secondary or key in self.primaries:
            return
        if key in self._restored_creates:
            self._restored_creates.discard(key)
            return
        if key in self.spilled:  # a re-run task made it again: the file already holds it
            return
        if self.store.get_local(key) is None:  # deleted before we got here
            return
        self.primaries[key] = data_size
        self.primary_bytes += data_size
        if self.config is not None:
            self._spill_over_threshold()

    def pulled(self, key: bytes) -> None:
        """A copy pulled from another node was sealed here; the creator's pin (the
        caller's) now waits to be claimed by a requester (``claim_pulled``)."""
        self._add_pulled_pin(key, unclaimed=1)

    def claim_pulled(self, key: bytes) -> bool:
        """A requester's pin on the pulled copy of ``key``, held until it has read it
        (``release_pulled``): the transfer's unclaimed pin, or a new one. False when
        the copy is gone already."""
        held = self._pulled_pins.get(key)
        if held is not None and held[1] > 0:
            held[1] -= 1
            return True
        if self.store.get_local_extent(key) is None:
            return False
        self._add_pulled_pin(key, unclaimed=0)
        return True

    def _add_pulled_pin(self, key: bytes, unclaimed: int) -> None:
        held = self._pulled_pins.pop(key, None) or [0, 0, 0.0]
        held[0] += 1
        held[1] += unclaimed
        held[2] = time.monotonic()
        self._pulled_pins[key] = held  # (moved to the end: the newest)

    def release_pulled(self, key: bytes) -> None:
        """A requester read its pulled copy (pinned it itself): one pin less here, and
        an evictable secondary copy once none is left."""
        held = self._pulled_pins.get(key)
        if held is None:  # released by the grace period, or freed, already
            return
        held[0] -= 1
        if held[0] <= 0:
            del self._pulled_pins[key]
        self.store.release_local(key)

    def object_deleted(self, key: bytes) -> None:
        """The store freed ``key``'s memory: a later copy here may be a primary again
        (a task re-executed on this node)."""
        self.secondary.discard(key)

    def _release_pulled(self, older_than_s: float) -> None:
        now = time.monotonic()
        while self._pulled_pins:
            key, (count, _, arrived) = next(iter(self._pulled_pins.items()))
            if now - arrived < older_than_s:
                return
            del self._pulled_pins[key]
            for _ in range(count):
                self.store.release_local(key)

    def free(self, keys: Iterable[bytes]) -> None:
        """The owner freed these objects: unpin, delete from memory and from disk."""
        for key in keys:
            if self._pop_primary(key) is not None:
                self.store.release_local(key)
            held = self._pulled_pins.pop(key, None)
            for _ in range(held[0] if held is not None else 0):
                self.store.release_local(key)
            self.secondary.discard(key)
            try:
                self.store.delete_local(key)  # also reaches delete() below
            except Exception:  # noqa: BLE001 - a free must not stop the others
                logger.exception("free of %s failed", key.hex())

    def _pop_primary(self, key: bytes) -> int | None:
        size = self.primaries.pop(key, None)
        if size is not None:
            self.primary_bytes -= size
        return size

    def _candidates(self):
        for key, size in self.primaries.items():
            if key not in self._spilling and self.store.sole_local_pin(key):
                yield key, size

    # -- spilling ----------------------------------------------------------------------------
    def _spill_over_threshold(self) -> None:
        config = self._spill_config
        if self._stopped or len(self._batches) >= config.max_io_workers:
            return
        in_flight = sum(self._spilling.values())
        excess = self.primary_bytes - in_flight - int(config.threshold * self.store.capacity_bytes)
        if excess <= 0:
            return
        batch = choose_spill_batch(
            self._candidates(), bytes_wanted=excess, min_spilling_size=config.min_spilling_size,
            max_count=config.max_fused_object_count)
        batch_bytes = sum(self.primaries[key] for key in batch)
        if batch and (batch_bytes >= config.min_spilling_size or not self._batches):
            self._start_batch(batch)

    def _start_batch(self, keys: list[bytes]) -> asyncio.Task:
        for key in keys:
            self._spilling[key] = self.primaries[key]
        task = asyncio.get_running_loop().create_task(self._spill(keys))
        self._batches.add(task)
        task.add_done_callback(self._batches.discard)
        return task

    def _next_path(self, first: bytes, count: int) -> str:
        self._directory_turn = (self._directory_turn + 1) % len(self.directories)
        self._file_seq += 1
        name = f"{first.hex()}-multi-{count}-{os.getpid()}-{self._file_seq}"
        return os.path.join(self.directories[self._directory_turn], name)

    async def _spill(self, keys: list[bytes]) -> int:
        """Write one batch to one file, then drop the batch from memory; returns bytes freed."""
        items = []
        for key in keys:
            got = self.store.get_local(key)  # a read pin while the thread writes it
            if got is not None:
                items.append((key, got[0], got[1]))
        if not items:
            for key in keys:
                self._spilling.pop(key, None)
            return 0
        path = self._next_path(keys[0], len(items))
        started = time.monotonic()
        try:
            copies = await asyncio.get_running_loop().run_in_executor(
                self._executor, _write_spill_file, path, items, self._spill_config.buffer_size)
        except Exception as exc:  # noqa: BLE001 - logged; the objects stay in memory
            logger.error("spilling %d objects to %s failed: %s", len(items), path, exc)
            copies = None
        finally:
            elapsed = time.monotonic() - started
            for key, view, _ in items:
                try:
                    view.release()
                except BufferError:  # cancelled at stop while the thread still writes it
                    continue  # (keep its pin: the arena is about to go anyway)
                self.store.release_local(key)
            for key in keys:
                self._spilling.pop(key, None)
        if copies is None:
            return 0
        freed, kept = 0, 0
        for copy, (key, _, _) in zip(copies, items):
            size = self._pop_primary(key)
            if size is None:  # freed by its owner while being written
                continue
            self.spilled[key] = copy
            kept += 1
            self.store.release_local(key)
            self.store.drop_memory_copy_local(key)
            freed += size
        self.stats.spilled_bytes += sum(c.data_size for c in copies)
        self.stats.spilled_objects += len(copies)
        self.stats.spill_time_s += elapsed
        if kept:
            self._file_objects[path] = kept
        else:
            self._delete_file(path)
        logger.debug("spilled %d objects (%d bytes) to %s in %.3f s", len(copies), freed,
                     path, elapsed)
        if freed and not self._stopped:
            self._spill_over_threshold()
        return freed

    async def make_room(self, num_bytes: int) -> bool:
        """Spill until ``num_bytes`` more fit; True once something was released."""
        if self._stopped:
            return False
        config = self._spill_config
        deadline = time.monotonic() + config.oom_grace_period_s
        used_before = self.store.used_bytes
        write_failed = False
        while True:
            # Pulled copies read by now become evictable (LRU eviction goes first).
            pinned_pulls = len(self._pulled_pins)
            self._release_pulled(PULLED_PIN_GRACE_S)
            if len(self._pulled_pins) < pinned_pulls:
                return True
            in_flight = sum(self._spilling.values())
            if in_flight < num_bytes and not write_failed:
                batch = choose_spill_batch(
                    self._candidates(), bytes_wanted=num_bytes - in_flight,
                    min_spilling_size=0, max_count=config.max_fused_object_count)
                if batch:
                    self._start_batch(batch)
            if self._batches:
                done, _ = await asyncio.wait(
                    set(self._batches), return_when=asyncio.FIRST_COMPLETED)
                if any(not t.cancelled() and t.exception() is None and t.result() > 0
                       for t in done):
                    return True
                write_failed = True  # (or its objects were freed: used_bytes shows that)
                continue
            # Nothing to spill (everything is being read, or is not a primary copy):
            # wait a little for readers or owners to release memory, as Ray does.
            if self.store.used_bytes < used_before:
                return True
            if time.monotonic() >= deadline or self._stopped:
                logger.warning(
                    "cannot make room for %d bytes: nothing left to spill (%d primaries, "
                    "%d bytes, in memory; store: %s)", num_bytes, len(self.primaries),
                    self.primary_bytes, self.store.memory_summary_local())
                return False
            await asyncio.sleep(_POLL_S)

    # -- restoring -----------------------------------------------------------------------------
    def contains(self, object_id: ObjectID) -> bool:
        return object_id.binary() in self.spilled

    def restore(self, object_id: ObjectID) -> None:
        key = object_id.binary()
        if key in self._restoring or self._stopped:
            if self._stopped:
                self.store.restore_failed_local(key)
            return
        task = asyncio.get_running_loop().create_task(self._restore(key))
        self._restoring[key] = task
        task.add_done_callback(lambda _t: self._restoring.pop(key, None))

    async def _restore(self, key: bytes) -> None:
        copy = self.spilled.get(key)
        if copy is None:
            self.store.restore_failed_local(key)
            return
        started = time.monotonic()
        try:
            buffer = await self.store.create_local_when_room(key, copy.data_size, copy.metadata)
        except ObjectExistsError:  # in memory already (a restore or pull beat us to it)
            return
        except ObjectStoreFullError as exc:
            logger.warning("cannot restore spilled object %s: %s", key.hex(), exc)
            self.store.restore_failed_local(key)
            return
        self._restored_creates.add(key)
        try:
            await asyncio.get_running_loop().run_in_executor(
                self._executor, _read_spilled, key, copy, buffer)
        except Exception as exc:  # noqa: BLE001 - the getters are answered below
            logger.error("restoring object %s from %s failed: %s", key.hex(), copy.url, exc)
            buffer.release()
            self._restored_creates.discard(key)
            self.store.abort_local(key)
            self.store.restore_failed_local(key)
            return
        buffer.release()
        self.stats.restored_bytes += copy.data_size
        self.stats.restored_objects += 1
        self.stats.restore_time_s += time.monotonic() - started
        self.store.seal_local(key)  # answers the parked gets, which pin it
        self.store.release_local(key)  # an evictable copy: the file stays the durable one

    def open_spilled(self, key: bytes) -> tuple[int, SpilledCopy] | None:
        """An open file descriptor positioned nowhere and where the object lies in it, to
        serve a pull from disk (the caller closes it; the data stays readable even if
        the object is freed and its file unlinked meanwhile)."""
        copy = self.spilled.get(key)
        if copy is None:
            return None
        try:
            return os.open(copy.path, os.O_RDONLY | os.O_CLOEXEC), copy
        except OSError as exc:
            logger.error("spilled object %s is unreadable: %s", key.hex(), exc)
            return None

    # -- deleting ------------------------------------------------------------------------------
    def delete(self, object_id: ObjectID) -> None:
        copy = self.spilled.pop(object_id.binary(), None)
        if copy is None:
            return
        left = self._file_objects.get(copy.path, 1) - 1
        if left > 0:
            self._file_objects[copy.path] = left
        else:
            self._file_objects.pop(copy.path, None)
            self._delete_file(copy.path)

    def _delete_file(self, path: str) -> None:
        self.stats.files_deleted += 1
        if self._executor is None or self._stopped:
            with contextlib.suppress(OSError):
                os.unlink(path)
            return
        self._executor.submit(_unlink_quietly, path)

    # -- records and shutdown ------------------------------------------------------------------
    def _record_path(self) -> str:
        return os.path.join(self.session_dir, RECORDS_DIR, f"{self.node_id}.json")

    def _write_record(self) -> None:
        """Tell ``ray stop`` where this raylet's files are, in case it is killed."""
        path = self._record_path()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump({"pid": os.getpid(), "directories": self.directories}, f)
        os.replace(tmp, path)

    async def stop(self) -> None:
        """Stop spilling, wait for the I/O threads, and remove this node's spill files."""
        self._stopped = True
        executor = self._executor
        if executor is None:
            return
        if self._batches:  # let writes in progress finish (seconds at most) rather than
            # pull their memory out from under the I/O threads
            await asyncio.wait(set(self._batches), timeout=10)
        for task in list(self._batches) + list(self._restoring.values()):
            task.cancel()
        await asyncio.get_running_loop().run_in_executor(
            None, lambda: executor.shutdown(wait=True, cancel_futures=True))
        for path in self.directories:
            shutil.rmtree(path, ignore_errors=True)
        with contextlib.suppress(OSError):
            os.unlink(self._record_path())
        self.spilled.clear()
        self._file_objects.clear()


def _unlink_quietly(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def remove_orphaned_spill_dirs(session_dir: str) -> list[str]:
    """Remove the spill directories of this session's raylets that are no longer
    running (killed ones cannot clean up after themselves); returns what was removed."""
    removed: list[str] = []
    records = os.path.join(session_dir, RECORDS_DIR)
    try:
        names = os.listdir(records)
    except OSError:
        return removed
    for name in names:
        if not name.endswith(".json"):
            continue
        path = os.path.join(records, name)
        try:
            with open(path) as f:
                record = json.load(f)
            pid, directories = int(record["pid"]), list(record["directories"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if _running(pid):
            continue
        for directory in directories:
            shutil.rmtree(directory, ignore_errors=True)
            removed.append(directory)
        with contextlib.suppress(OSError):
            os.unlink(path)
    with contextlib.suppress(OSError):
        os.rmdir(records)  # only when empty
    return removed


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
