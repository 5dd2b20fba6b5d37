"""The object plane of one process: put, get, wait, and serving what it owns.

Small values live in the in-process ``MemoryStore``; large ones in the node's plasma
store (the memory store then records where). ``ray.get`` of a ref owned elsewhere
asks its owner once (``get_object``); a value in another node's store is pulled
through the local raylet first. Task arguments are encoded here too: small values
inline, large ones put once, refs owned here inlined once they exist.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import plasma
from ray._private.messages import (
    Inline,
    InlineArg,
    InPlasma,
    ObjectValue,
    OwnerAddress,
    RefArg,
    ReturnObject,
    TaskArg,
    TaskSpec,
    value_from_wire,
    value_to_wire,
)
from ray._private.object_ref import ObjectRef
from ray._private.rpc import Deferred, Future, RemoteError, RpcPeer
from ray._private.runtime import serialization as ser
from ray._private.runtime.context import JobState, TaskContext
from ray._private.runtime.memory_store import MemoryStore
from ray._private.runtime.peers import PeerPool
from ray._private.runtime.reference_counter import ReferenceCounter
from ray._private.runtime.serialization import serializability_report
from ray.exceptions import (
    GetTimeoutError,
    ObjectLostError,
    ObjectStoreFullError,
    RayConnectionError,
)

logger = logging.getLogger(__name__)

NOT_LOCAL = object()  # read_local: the object is not sealed in this node's store


# How long a read waits for an object stored on this node to be sealed (see _value).
_SEAL_GRACE_MS = 5000
# How often ray.wait(fetch_local=True) looks at the pulls it started (a transfer from
# another node takes longer than this).
_PULL_POLL_S = 0.01

class EncodedArgs:
    """A call's arguments as a task spec carries them, and what the owner must track."""

    __slots__ = ("args", "kwarg_names", "deps", "pinned")

    def __init__(self, args: list[TaskArg], kwarg_names: list[str], deps: list[bytes],
                 pinned: list[bytes]):
        self.args = args
        self.kwarg_names = kwarg_names
        self.deps = deps  # owned refs without a value yet: the task waits for them
        self.pinned = pinned  # ids the task keeps alive until it finishes


class _Together:
    """One ``get`` of several objects: their ids, then (from its first read of an object
    stored on another node) the pinned buffers of those pulled as one bundle."""

    __slots__ = ("ids", "held")

    def __init__(self, ids: list[bytes]):
        self.ids = ids
        self.held: dict | None = None


class ObjectClient:
    def __init__(self, *, memory_store: MemoryStore, refs: ReferenceCounter,
                 store: plasma.PlasmaClient, peers: PeerPool, job: JobState,
                 context: TaskContext, node_id: bytes, max_inline_bytes: int,
                 is_worker: bool):
        self._memory = memory_store
        self._refs = refs
        self._plasma = store
        self._peers = peers
        self._job = job
        self._context = context
        self._node_id = node_id
        self._max_inline = max_inline_bytes
        self._is_worker = is_worker
        self._address = peers.address
        self._requested: set[bytes] = set()
        self.shutting_down = False
        # Called before a worker's task waits for objects (the executor sends the results
        # it has batched: the awaited object may be one of them).
        self.before_wait: Callable[[], None] | None = None

    # -- put -----------------------------------------------------------------------
    def put(self, value: Any) -> ObjectRef:
        if isinstance(value, ObjectRef):
            raise TypeError(
                "Calling ray.put on an ObjectRef is not allowed: the ref already names a "
                "stored value. Put the value itself, or pass the ref around directly."
            )
        try:
            serialized, contained = ser.serialize(value)
        except TypeError as exc:
            raise TypeError(f"Could not serialize the put value {value!r}:\n"
                            f"{serializability_report(value, exc)}") from exc
        object_id = self._job.ids.next_put_id(self._context.task_id)
        self._refs.add_owned(object_id)
        if contained:
            self._refs.mark_escaped([r.binary() for r in contained])
        self._memory.put(object_id, self._store(object_id, serialized))
        return ObjectRef(object_id, None)

    def _store(self, object_id: bytes, serialized) -> ObjectValue:
        if serialized.total_bytes <= self._max_inline:
            return Inline(serialized.metadata, serialized.to_bytes())
        self._put_plasma(object_id, serialized)
        return InPlasma(self._node_id, serialized.total_bytes)

    def _put_plasma(self, object_id: bytes, serialized) -> None:
        try:
            buf = self._plasma.create(object_id, serialized.total_bytes, serialized.metadata)
        except plasma.errors.ObjectExistsError:
            # Ids are deterministic: an earlier attempt of this task (re-run after its
            # worker died) or a copy pulled to this node already holds this object.
            # That copy stands, as in Ray; a lost one is rebuilt like any other.
            return
        except plasma.errors.ObjectStoreFullError as exc:
            raise ObjectStoreFullError(
                f"{exc} Free references to objects you no longer need, or start ray with a "
                "larger object_store_memory."
            ) from None
        try:
            serialized.write_to(buf)
        except BaseException:
            buf.release()
            self._plasma.abort(object_id)
            raise
        buf.release()
        self._plasma.seal(object_id)
        self._plasma.release(object_id)

    def store_return(self, object_id: bytes, value: Any) -> ReturnObject:
        """A task's return value, stored where its owner will look for it."""
        serialized, contained = ser.serialize(value)
        if contained:
            self._refs.mark_escaped([r.binary() for r in contained])
        return ReturnObject(object_id, self._store(object_id, serialized))

    def store_value(self, object_id: bytes, value: ObjectValue) -> None:
        self._memory.put(object_id, value)

    def store_error(self, object_ids: list[bytes], error: BaseException) -> None:
        small = ser.serialize_error(error)
        for oid in object_ids:
            self._memory.put(oid, Inline(small.metadata, small.data))

    def new_return_refs(self, task_id: bytes, num_returns: int) -> list[ObjectRef]:
        """Refs to a task's returns (a generator task, ``num_returns`` < 0, has one)."""
        refs = []
        for i in range(1, max(num_returns, 1 if num_returns < 0 else 0) + 1):
            oid = task_id + i.to_bytes(4, "little")
            self._refs.add_owned_local(oid)
            refs.append(ObjectRef._counted(oid))
        return refs

    # -- task arguments -----------------------------------------------------------------
    def encode_args(self, args: tuple | list, kwargs: dict, what: str = "") -> EncodedArgs:
        """The task's arguments as the spec carries them (``what``: the function or method
        they are for, named in the error when one cannot be serialized)."""
        encoded: list[TaskArg] = []
        deps: list[bytes] = []
        pinned: list[bytes] = []
        values = list(args) + list(kwargs.values()) if kwargs else args
        for value in values:
            if isinstance(value, ObjectRef):
                oid = value.binary()
                owner = value.owner_address()
                pinned.append(oid)
                if owner is None or owner.worker_id == self._address.worker_id:
                    entry = self._memory.get(oid)
                    if type(entry) is Inline:  # the id stays for the timeline's arrows
                        encoded.append(InlineArg(entry.metadata, entry.data, oid))
                        continue
                    if entry is None:
                        deps.append(oid)
                    encoded.append(RefArg(oid, self._address))
                else:
                    encoded.append(RefArg(oid, owner))
                continue
            try:
                serialized, contained = ser.serialize(value)
            except TypeError as exc:
                raise TypeError(
                    f"Could not serialize the argument {value!r} for a task or actor "
                    f"{what}:\n{serializability_report(value, exc)}") from exc
            if contained:
                self._refs.mark_escaped([r.binary() for r in contained])
            if serialized.total_bytes <= self._max_inline:
                encoded.append(InlineArg(serialized.metadata, serialized.to_bytes()))
            else:  # implicit put: large arguments go through the object store once
                oid = self._job.ids.next_put_id(self._context.task_id)
                self._refs.add_owned(oid)
                self._put_plasma(oid, serialized)
                self._memory.put(oid, InPlasma(self._node_id, serialized.total_bytes))
                pinned.append(oid)
                encoded.append(RefArg(oid, self._address))
        self._refs.add_submitted(pinned)
        return EncodedArgs(encoded, list(kwargs) if kwargs else [], deps, pinned)

    def inline_resolved_args(self, spec: TaskSpec) -> None:
        """Replace refs owned here whose small value now exists by the value itself."""
        args = spec.args
        own = self._address.worker_id
        for i, arg in enumerate(args):
            if type(arg) is RefArg and arg.owner.worker_id == own:
                entry = self._memory.get(arg.object_id)
                if type(entry) is Inline:
                    args[i] = InlineArg(entry.metadata, entry.data, arg.object_id)

    def when_ready(self, object_ids: list[bytes], callback: Callable[[], None]) -> None:
        self._memory.on_ready(object_ids, callback)

    def all_ready(self, object_ids: list[bytes]) -> bool:
        return all(self._memory.contains(o) for o in object_ids)

    def args_stored_elsewhere(self, args: list[TaskArg], node_id: bytes) -> list[list]:
        """``[object id, node id]`` of the arguments passed by reference that this process
        knows are stored on another node than ``node_id``: what that node's raylet pulls
        before the task is pushed to a worker there (Ray dispatches a task only once its
        arguments are local, so a worker never holds its CPU waiting for a transfer)."""
        elsewhere: list[list] = []
        for arg in args:
            if type(arg) is RefArg:
                entry = self._memory.get(arg.object_id)
                if type(entry) is InPlasma and entry.node_id != node_id:
                    elsewhere.append([arg.object_id, entry.node_id])
        return elsewhere

    def read_local(self, object_ids: list[bytes]) -> list:
        """The values of objects sealed in this node's store, read without asking their
        owners (a task's arguments: the owner pushes a task once they are on its node);
        ``NOT_LOCAL`` for each one that is not here (fetch it through its owner)."""
        try:
            got = self._plasma.get_buffers(object_ids, timeout_ms=0, with_meta=True)
        except (OSError, plasma.errors.PlasmaError) as exc:
            logger.debug("could not read arguments from the object store: %s", exc)
            return [NOT_LOCAL] * len(object_ids)
        return [NOT_LOCAL if item is None else ser.deserialize(item[1], item[0])
                for item in got]

    # -- get / wait ----------------------------------------------------------------------
    def _is_own(self, owner: OwnerAddress | None) -> bool:
        return owner is None or owner.worker_id == self._address.worker_id

    def _ensure_requested(self, pairs) -> None:
        for object_id, owner in pairs:
            if self._is_own(owner) or self._memory.contains(object_id):
                continue
            # One request per object per process: remember it in the peer-independent set.
            if object_id in self._requested:
                continue
            self._requested.add(object_id)
            self._request_from_owner(object_id, owner)

    def _request_from_owner(self, object_id: bytes, owner: OwnerAddress) -> None:
        """Ask ``owner`` for the object; the answer lands in our memory store."""
        try:
            peer = self._peers.connect_worker(owner)
        except OSError as exc:
            self.store_lost(object_id, f"its owner at {owner.host_port()} is unreachable ({exc})")
            return
        fut = peer.call("get_object", object_id)

        def done(f):
            try:
                reply = f.result()
            except (RemoteError, RayConnectionError) as exc:
                self.store_lost(object_id, f"its owner died ({exc})")
                return
            self._memory.put(object_id, value_from_wire(reply))

        fut.add_done_callback(done)

    def store_lost(self, object_id: bytes, reason: str) -> None:
        self.store_error([object_id], ObjectLostError(object_id.hex(), reason))

    def serve_get_object(self, peer: RpcPeer, object_id: bytes) -> list | Deferred:
        """``get_object`` from a borrower: the value, or an answer once it exists."""
        entry = self._memory.get(object_id)
        if entry is not None:
            return value_to_wire(entry)
        if not self._refs.is_tracked(object_id):
            raise KeyError(f"object {object_id.hex()} is not owned here (freed or never created)")
        deferred = Deferred()

        def ready():
            deferred.resolve(value_to_wire(self._memory.get(object_id)))

        self._memory.on_ready([object_id], ready)
        return deferred

    def get(self, refs: list[ObjectRef], timeout_s: float | None) -> list:
        return self.get_by_ids([(r.binary(), r.owner_address()) for r in refs], timeout_s)

    def get_by_ids(self, pairs, timeout_s: float | None, *, lend_after_s: float = 0.0
                   ) -> list:
        """Values of ``(object id, owner)`` pairs. A worker waiting inside a task lends
        its CPU to the raylet once it has waited ``lend_after_s`` (at once for ray.get;
        task arguments wait a little first, since a ready one arrives within
        milliseconds and Ray does not release a task's CPU while fetching its
        arguments)."""
        self._ensure_requested(pairs)
        ids = [oid for oid, _ in pairs]
        unique = list(dict.fromkeys(ids))
        if not all(self._memory.contains(oid) for oid in unique):
            if self.before_wait is not None:
                self.before_wait()
            ok = False
            # As Ray: an error among them is raised at once, without waiting for the rest.
            if lend_after_s > 0 and (timeout_s is None or timeout_s > lend_after_s):
                ok = self._memory.wait(unique, len(unique), lend_after_s, fail_fast=True)
                if not ok and timeout_s is not None:
                    timeout_s -= lend_after_s
            if not ok and self._all_in_local_store(unique):
                # As Ray: a task whose objects are already in this node's store keeps its
                # CPU (only the owners' answers saying where they are are awaited).
                ok = self._memory.wait(unique, len(unique), timeout_s, fail_fast=True)
            elif not ok:
                self._set_blocked(True)
                try:
                    ok = self._memory.wait(unique, len(unique), timeout_s, fail_fast=True)
                finally:
                    self._set_blocked(False)
            if not ok:
                missing = [oid.hex() for oid in unique if not self._memory.contains(oid)]
                raise GetTimeoutError(
                    f"ray.get timed out after {timeout_s} s waiting for {len(missing)} of "
                    f"{len(unique)} objects (first: {missing[0]})."
                )
        for oid in unique:
            self._requested.discard(oid)
        if not all(self._memory.contains(oid) for oid in unique):  # an error came first
            for oid in unique:
                entry = self._memory.get(oid)
                if type(entry) is Inline and ser.is_error(entry.metadata):
                    self._value(oid)  # raises it
        if len(unique) > 1:  # the first one read from another node brings the others
            together = _Together(unique)
            return [self._value(oid, together) for oid in ids]
        return [self._value(oid) for oid in ids]

    def _pull_together(self, object_ids: list[bytes]) -> dict:
        """Objects this get reads from other nodes' stores arrive as one bundle (see
        ``object_manager.pull_bundle``: readers' partial sets cannot fill the store), and
        are pinned at once, so the store cannot evict one before it is read: their
        ``(data, metadata)`` by id."""
        get, here = self._memory.get, self._node_id
        remote = [[oid, entry.node_id] for oid in object_ids
                  if type(entry := get(oid)) is InPlasma and entry.node_id != here]
        if len(remote) < 2:
            return {}  # one object: _value pulls it
        try:
            self._peers.local_raylet().call_sync("pull_objects", remote, timeout=None)
        except RemoteError as exc:
            first = remote[0][0].hex()
            raise ObjectLostError(first, f"{len(remote)} objects could not be fetched: "
                                         f"{exc}") from None
        ids = [oid for oid, _ in remote]
        try:
            got = self._plasma.get_buffers(ids, timeout_ms=0, with_meta=True)
        finally:  # pinned here now: the raylet's pins for us can go
            self._release_pulled(ids)
        return {oid: item for oid, item in zip(ids, got) if item is not None}

    def _value(self, object_id: bytes, together: _Together | None = None) -> Any:
        entry = self._memory.get(object_id)
        if entry is None:
            raise ObjectLostError(object_id.hex(), "it was freed while being read")
        if isinstance(entry, Inline):
            return ser.deserialize(entry.metadata, entry.data)
        if entry.node_id != self._node_id:
            if together is not None:
                if together.held is None:
                    together.held = self._pull_together(together.ids)
                held = together.held.pop(object_id, None)
                if held is not None:
                    return ser.deserialize(held[1], held[0])
            self._pull(object_id, entry.node_id)
            try:
                got = self._plasma.get_buffers([object_id], timeout_ms=0, with_meta=True)[0]
            finally:  # pinned here now: the raylet's pin for us can go
                self._release_pulled([object_id])
        else:
            got = self._plasma.get_buffers([object_id], timeout_ms=0, with_meta=True)[0]
        if got is None and entry.node_id == self._node_id:
            # Its creator on this node sealed it before telling us, but the seal travels
            # on the creator's own store connection and may not be handled yet.
            got = self._plasma.get_buffers([object_id], timeout_ms=_SEAL_GRACE_MS,
                                           with_meta=True)[0]
        if got is None:
            raise ObjectLostError(object_id.hex(), "it is no longer in the object store")
        data, metadata = got
        return ser.deserialize(metadata, data)

    def _release_pulled(self, object_ids: list[bytes]) -> None:
        try:
            self._peers.local_raylet().notify("release_pulled", object_ids)
        except (RayConnectionError, OSError):  # the raylet is gone, its pins with it
            logger.debug("could not release pulled copies of %d objects", len(object_ids))

    def _pull(self, object_id: bytes, node_id: bytes) -> None:
        try:
            self._peers.local_raylet().call_sync("pull_object", object_id, node_id, timeout=None)
        except RemoteError as exc:
            raise ObjectLostError(object_id.hex(), f"it could not be fetched: {exc}") from None

    def _all_in_local_store(self, object_ids: list[bytes]) -> bool:
        """Whether a task's ``ray.get`` needs nothing that is not sealed in this node's
        store already (then it does not lend its CPU: nothing is computed for it)."""
        if not self._is_worker or not self._context.running_task():
            return False
        try:
            return all(self._memory.contains(oid) or self._plasma.contains(oid)
                       for oid in object_ids)
        except (OSError, plasma.errors.PlasmaError) as exc:
            logger.debug("could not ask the object store what it holds: %s", exc)
            return False

    def _set_blocked(self, blocked: bool) -> None:
        """A worker blocked inside a task lends its CPU (the raylet runs other work)."""
        if not self._is_worker or not self._context.running_task():
            return
        try:
            self._peers.local_raylet().notify(
                "notify_blocked" if blocked else "notify_unblocked", self._address.worker_id)
        except RayConnectionError:
            pass  # the raylet is gone: this worker exits when it notices (raylet_lost)

    def wait(self, refs: list[ObjectRef], num_returns: int, timeout_s: float | None,
             fetch_local: bool = True) -> tuple[list[ObjectRef], list[ObjectRef]]:
        """``ray.wait``: the first ``num_returns`` refs that are ready, and the rest.
        ``fetch_local`` (Ray's default): a value in another node's store is pulled to this
        node and counts as ready only once here; False: ready once it exists anywhere,
        and nothing is pulled."""
        pairs = [(r.binary(), r.owner_address()) for r in refs]
        self._ensure_requested(pairs)
        if self.before_wait is not None:
            self.before_wait()
        ids = [oid for oid, _ in pairs]
        self._set_blocked(True)
        try:
            is_ready: Callable[[bytes], bool]
            if fetch_local:
                is_ready = self._wait_local(ids, num_returns, timeout_s).__contains__
            else:
                self._memory.wait(ids, num_returns, timeout_s)
                is_ready = self._memory.contains
        finally:
            self._set_blocked(False)
        ready: list[ObjectRef] = []
        not_ready: list[ObjectRef] = []
        for ref in refs:
            if len(ready) < num_returns and is_ready(ref.binary()):
                ready.append(ref)
            else:
                not_ready.append(ref)
        return ready, not_ready

    def _wait_local(self, object_ids: list[bytes], num_returns: int,
                    timeout_s: float | None) -> set[bytes]:
        """Wait until ``num_returns`` of the objects are on this node (in this process's
        memory store, or sealed in this node's object store), pulling each one that is
        stored on another node as soon as it exists; the ids that are here. A pull that
        fails counts as here: ``ray.get`` then raises the object's loss."""
        unique = list(dict.fromkeys(object_ids))
        need = min(num_returns, len(unique))
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        here: set[bytes] = set()
        pulls: dict[bytes, Future] = {}
        while True:
            present = 0
            for oid in unique:
                entry = self._memory.get(oid)
                if entry is None:
                    continue
                present += 1
                if oid in here:
                    continue
                if not isinstance(entry, InPlasma) or entry.node_id == self._node_id:
                    here.add(oid)
                elif oid not in pulls:  # (the raylet answers once the copy is sealed here)
                    pulls[oid] = self._peers.local_raylet().call(
                        "pull_object", oid, entry.node_id)
                elif pulls[oid].done():
                    here.add(oid)
                    if pulls[oid].exception() is None:  # an evictable copy here now
                        self._release_pulled([oid])
            if len(here) >= need:
                return here
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return here
            if present > len(here):  # transfers under way: look at them again soon
                left = _PULL_POLL_S if left is None else min(left, _PULL_POLL_S)
            self._memory.wait(unique, present + 1, left)  # or until one more exists

    def as_future(self, ref: ObjectRef) -> concurrent.futures.Future:
        fut: concurrent.futures.Future = concurrent.futures.Future()
        pair = (ref.binary(), ref.owner_address())
        self._ensure_requested([pair])

        def ready():
            try:
                fut.set_result(self._value(pair[0]))
            except BaseException as exc:  # noqa: BLE001 - handed to the future's reader
                fut.set_exception(exc)

        self._memory.on_ready([pair[0]], lambda: threading.Thread(target=ready).start())
        return fut

    # -- freeing -------------------------------------------------------------------------
    def free(self, object_id: bytes, owned: bool, free_remote: Callable[[bytes, bytes], None]
             ) -> None:
        """The last reference went: drop the value and free the store copy we own."""
        entry = self._memory.delete(object_id)
        if self.shutting_down or not owned or not isinstance(entry, InPlasma):
            return
        try:
            if entry.node_id == self._node_id:
                self._peers.local_raylet().notify("free_objects", [object_id])
            else:
                free_remote(entry.node_id, object_id)
        except (RayConnectionError, OSError) as exc:
            # The node holding it is gone, and the copy with it.
            logger.debug("could not free %s on node %s: %s", object_id.hex(),
                         entry.node_id.hex()[:8], exc)

    def unpin(self, object_ids: list[bytes]) -> None:
        """Stop keeping ``object_ids`` alive for a task (pinned by ``encode_args``)."""
        self._refs.remove_submitted(object_ids)

    def drop_node(self, node_id: bytes) -> list[bytes]:
        """Forget the values stored on a dead node; the ids that were there."""
        lost = self._memory.ids_on_node(node_id)
        for oid in lost:
            self._memory.delete(oid)
        return lost

    def delete(self, object_id: bytes) -> None:
        self._memory.delete(object_id)

    def entry(self, object_id: bytes) -> ObjectValue | None:
        return self._memory.get(object_id)


__all__ = ["NOT_LOCAL", "EncodedArgs", "ObjectClient"]
