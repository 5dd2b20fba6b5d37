"""Node-to-node object transfer: pull an object from another raylet into the local store.

The object is written straight into the local arena in chunks, with several
chunk requests in flight so transfer overlaps with copying. Concurrent pulls of
one object share a single transfer.
"""

from __future__ import annotations

import asyncio
import logging

from ray._private import aio
from ray._private.gcs import keys

logger = logging.getLogger(__name__)

_MAX_CHUNKS_IN_FLIGHT = 4


async def _peer_for(node, node_id_hex: str):
    peers = node.__dict__.setdefault("_om_peers", {})
    peer = peers.get(node_id_hex)
    if peer is not None and not peer.closed:
        return peer
    info = node.gcs.hget_obj(keys.NODES, node_id_hex)
    if not info or not info.get("alive", True):
        raise ConnectionError(f"node {node_id_hex[:8]} is not alive")
    peer = await aio.open_connection((info["node_ip"], info["raylet_port"]), {}, "object-manager")
    peers[node_id_hex] = peer
    return peer


async def _transfer(node, object_id: bytes, node_id: bytes) -> None:
    if node.store.contains_local(object_id):
        return
    peer = await _peer_for(node, node_id.hex())
    info = await aio.wrap(peer.call("object_info", object_id))
    if info is None:
        raise KeyError(f"object {object_id.hex()} is not on node {node_id.hex()[:8]}")
    size, metadata = info
    node._secondary.add(object_id)
    buf = node.store.create_local(object_id, size, metadata)
    chunk = node.config.object_transfer_chunk_bytes
    try:
        offsets = list(range(0, size, chunk))
        sem = asyncio.Semaphore(_MAX_CHUNKS_IN_FLIGHT)

        async def fetch(offset):
            async with sem:
                data = await aio.wrap(peer.call("read_object_chunk", object_id, offset, chunk))
                buf[offset:offset + len(data)] = data

        await asyncio.gather(*(fetch(o) for o in offsets))
    except BaseException:
        buf.release()
        node.store.abort_local(object_id)
        node._secondary.discard(object_id)
        raise
    buf.release()
    node.store.seal_local(object_id)


async def pull(node, object_id: bytes, node_id: bytes, deferred) -> None:
    inflight = node.__dict__.setdefault("_om_inflight", {})
    task = inflight.get(object_id)
    if task is None:
        task = asyncio.ensure_future(_transfer(node, object_id, node_id))
        inflight[object_id] = task
        task.add_done_callback(lambda _t: inflight.pop(object_id, None))
    try:
        await asyncio.shield(task)
        deferred.resolve(True)
    except Exception as exc:
        logger.warning("pull of %s from %s failed: %s", object_id.hex(), node_id.hex()[:8], exc)
        deferred.reject(exc)
