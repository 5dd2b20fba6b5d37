"""A raylet's heartbeat and, on the head, the cluster's dead-node monitor.

Every ``heartbeat_period_s`` each raylet writes its heartbeat (``ray:node_heartbeats``),
publishes its load, reads the node table and the load records, and hands them to the
raylet (``on_beat``: its views of the other nodes, placement groups). A raylet that
finds its own node marked dead stops (fail-stop: everyone has failed over already).

Reading both tables every beat costs the GCS O(nodes) per raylet per beat, O(nodes²)
for the cluster, even when nothing changes. So each table has a version counter that
its writers bump after a change (``ray:nodes_version``: a node joined, stopped or was
marked dead; ``ray:node_loads_version``: a node's resources or demand moved), and a
beat re-reads a table only when its counter moved, plus once every half timeout
whatever it says (a writer that bumps nothing, a Redis restarted empty whose counter
came back to the value we cached). An idle cluster's beats then cost O(1) each.

The head also judges the others: a node whose last heartbeat is older than
``heartbeat_timeout_s`` is marked dead in the node table and announced on
``ray:ch:nodes``. It judges only after a full timeout of watching: after it took over
as head, after the GCS answered again (an outage stopped every node's heartbeats at
once), and after its own heartbeat ran late (its loop stalled, so the others' silence
was not watched).

:class:`NodeMonitor` is handed the GCS, its settings and the few raylet actions it
triggers as callables; the clock is injected.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from ray._private.gcs import keys
from ray._private.gcs.versioned import VersionedTable, bump_version

logger = logging.getLogger(__name__)


class NodeMonitor:
    """One raylet's heartbeat loop, and the head's judgement of silent nodes."""

    def __init__(self, gcs, *, node_id: str, is_head: bool, period_s: float,
                 timeout_s: float, gcs_address: str,
                 register_node: Callable[[], None],
                 publish_load: Callable[[float], None],
                 on_beat: Callable[[dict, dict, float], None],
                 stop: Callable[[], None],
                 is_stopping: Callable[[], bool],
                 clock: Callable[[], float] = time.time):
        self._gcs = gcs
        self._node_id = node_id
        self._is_head = is_head
        self._period_s = period_s
        self._timeout_s = timeout_s
        self._gcs_address = gcs_address  # named in the fail-stop message (how to rejoin)
        self._register_node = register_node  # write this node's entry again
        self._publish_load = publish_load  # this node's load record, at a time
        self._on_beat = on_beat  # (nodes, loads, now): the raylet's views of the cluster
        self._stop = stop
        self._is_stopping = is_stopping
        self._clock = clock
        self._gcs_down = False
        self._gcs_back_at = 0.0  # when the GCS answered again after an outage
        self._last_beat_at = clock()  # when our last heartbeat landed
        self.nodes = VersionedTable(keys.NODES, keys.NODES_VERSION, timeout_s / 2)
        self.loads = VersionedTable(keys.NODE_LOADS, keys.NODE_LOADS_VERSION, timeout_s / 2)

    async def run(self) -> None:
        """Beat every period until the raylet stops; a failed beat (the GCS is
        unreachable) is logged once per outage and retried the next period."""
        while not self._is_stopping():
            try:
                self.beat()
            except Exception as exc:  # noqa: BLE001 - logged; retried every heartbeat period
                if not self._gcs_down:
                    logger.warning("GCS unreachable (%s); retrying every %.1f s", exc,
                                   self._period_s)
                self._gcs_down = True
            await asyncio.sleep(self._period_s)

    def beat(self) -> None:
        now = self._clock()
        self._gcs.hset(keys.NODE_HEARTBEATS, self._node_id, str(now).encode())
        if self._gcs_down:
            # Redis restarted: every node's heartbeats stopped landing at once, so the
            # monitor gives them a full timeout to resume before judging anyone.
            logger.warning("GCS reachable again")
            self._gcs_down = False
            self._gcs_back_at = now
            self.nodes.invalidate()  # it may have come back empty
            self.loads.invalidate()
        elif now - self._last_beat_at > self._timeout_s / 2:
            # Our own heartbeat was late by half a timeout without a failed call: the
            # Redis client retried through an outage that ended within one call, or this
            # loop stalled. Either way the others' silence was not watched: grace again.
            self._gcs_back_at = now
        self._last_beat_at = self._clock()
        self._publish_load(now)
        nodes = self.nodes.read(self._gcs, now)
        loads = self.loads.read(self._gcs, now)
        if self._node_id not in nodes:  # a Redis restarted without its append-only file
            self._register_node()
            self.nodes.invalidate()
        elif not nodes[self._node_id].get("alive", True) and not self._is_stopping():
            self._declared_dead(now)
            return
        if self._is_head and now - self._gcs_back_at > self._timeout_s:
            self._mark_silent_nodes_dead(nodes, now)
        self._on_beat(nodes, loads, now)

    def take_over_as_head(self) -> None:
        """A head starting over a GCS that outlived the previous head: mark that head dead
        at once (owners fail over what ran there without waiting for a timeout), and
        judge the other nodes only after a full timeout of our own (their heartbeats may
        not have landed while the GCS was down)."""
        now = self._clock()
        self._gcs_back_at = now
        for node_id, info in self._gcs.hgetall_obj(keys.NODES).items():
            if node_id != self._node_id and info.get("is_head") and info.get("alive", True):
                logger.warning("taking over from the previous head node %s (pid %s): "
                               "marking it dead", node_id[:8], info.get("pid"))
                self._mark_node_dead(node_id, info, now)

    def _declared_dead(self, now: float) -> None:
        """The head marked this node dead (it missed heartbeats, e.g. stalled under load).

        Everyone has already failed over: owners rebuilt or gave up on its objects and
        retried its tasks elsewhere. Coming back under the same id would contradict that,
        so the node stops (fail-stop, as Ray's raylet does); start it again to rejoin."""
        info = self._gcs.hget_obj(keys.NODES, self._node_id) or {}
        silent_s = now - info.get("death_time", now)
        logger.error(
            "the head marked this node (%s) dead after it missed heartbeats for over "
            "%.1f s (%.1f s ago); its workers and objects are no longer part of the "
            "cluster, so it shuts down. Rejoin with `ray start --address=%s`; if the "
            "machine is this loaded, raise heartbeat_timeout_s in _internal_config.",
            self._node_id[:8], self._timeout_s, silent_s, self._gcs_address,
        )
        self._stop()

    def _mark_silent_nodes_dead(self, nodes: dict, now: float) -> None:
        """The head's monitor: a node without a heartbeat for heartbeat_timeout_s is dead."""
        beats = self._gcs.hgetall(keys.NODE_HEARTBEATS)
        for node_id, info in nodes.items():
            if node_id == self._node_id or not info.get("alive", True):
                continue
            last = float(beats.get(node_id, b"0") or 0)
            if now - last > self._timeout_s:
                logger.warning("node %s missed heartbeats for %.1f s: marking it dead",
                               node_id[:8], now - last)
                self._mark_node_dead(node_id, info, now)

    def _mark_node_dead(self, node_id: str, info: dict, now: float) -> None:
        info["alive"] = False
        info["death_time"] = now
        self._gcs.hset_obj(keys.NODES, node_id, info)
        bump_version(self._gcs, keys.NODES_VERSION)
        self._gcs.publish_obj(keys.CHANNEL_NODES, {"node_id": node_id, "alive": False})
