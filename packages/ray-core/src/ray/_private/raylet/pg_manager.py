"""Placement groups, the I/O part (decisions are in ``placement.py``).

Every raylet serves ``prepare_bundles`` / ``commit_bundles`` / ``cancel_bundles``
over its ``BundleLedger`` (:class:`NodeBundles`). The head raylet also runs the one
:class:`PlacementGroupManager`: it takes ``create_placement_group`` /
``remove_placement_group`` requests, keeps each group's record in the GCS
(``ray:placement_groups``, state changes announced on ``ray:ch:placement_groups``),
and places pending groups: choose nodes over the latest resource views, prepare
every bundle on its node, then commit them all; if any prepare or commit fails,
cancel what was taken and try again at the next heartbeat, so a failure never
leaks resources and an infeasible group simply stays PENDING. Bundles on a node
that dies go back to RESCHEDULING and are placed again; groups of a job that
finished are removed unless ``lifetime="detached"``.
"""

from __future__ import annotations

import asyncio
import logging
import time

from ray._private import aio
from ray._private.gcs import keys
from ray._private.messages import (
    CreatePlacementGroup,
    LeaseFailed,
    PlacementGroupAccepted,
    PlacementGroupRefused,
)
from ray._private.raylet.placement import STRATEGIES, BundleLedger, group_of, place_bundles

logger = logging.getLogger(__name__)

PENDING, CREATED, REMOVED, RESCHEDULING = "PENDING", "CREATED", "REMOVED", "RESCHEDULING"
_RPC_TIMEOUT_S = 10.0
_JOB_CHECK_PERIOD_S = 1.0


def removed_reply(pg_hex: str) -> list:
    """The LeaseReply for requests of a removed group (``messages.LeaseFailed``)."""
    return LeaseFailed(LeaseFailed.PLACEMENT_GROUP_REMOVED, (
        f"placement group {pg_hex} was removed (remove_placement_group), so tasks and "
        "actors scheduled into it cannot run; create a new group and schedule them there."
    )).to_wire()


def pg_of_shape(shape: dict) -> str | None:
    for name in shape:
        pg_hex = group_of(name)
        if pg_hex is not None:
            return pg_hex
    return None


class NodeBundles:
    """This raylet's side of the two-phase reservation."""

    def __init__(self, node):
        self.node = node
        self.ledger = BundleLedger(node.resources)
        self.removed: set[str] = set()  # groups cancelled here (their requests fail at once)

    def handlers(self) -> dict:
        return {
            "prepare_bundles": self.h_prepare,
            "commit_bundles": self.h_commit,
            "cancel_bundles": self.h_cancel,
            "held_bundles": self.h_held,
        }

    def h_held(self, peer):
        """``{pg_hex: [[index, committed], ...]}``: what this node holds (a recovering
        head reconciles its group records with it)."""
        return {pg_hex: [[index, bundle.committed] for index, bundle in group.items()]
                for pg_hex, group in self.ledger.groups.items()}

    def h_prepare(self, peer, pg_hex, bundles):
        ok = self.ledger.prepare(pg_hex, [(int(i), dict(shape)) for i, shape in bundles])
        logger.info("placement group %s: prepare %s -> %s", pg_hex[:8],
                    [i for i, _ in bundles], ok)
        return ok

    def h_commit(self, peer, pg_hex):
        ok = self.ledger.commit(pg_hex)
        self._published()
        self.node._apply(self.node.scheduler.dispatch())
        return ok

    def _published(self) -> None:
        """Tell the other raylets about changed group resources now, not at the next
        heartbeat (they spill the group's tasks here from what they read)."""
        try:
            self.node.publish_load(time.time())
        except Exception:  # the heartbeat retries and reports GCS trouble
            logger.debug("could not publish the load after a bundle change", exc_info=True)

    def h_cancel(self, peer, pg_hex, indices=None, removed=True):
        """Give bundles back; with ``removed``, also stop everything running in them and
        fail the requests queued for the group."""
        if removed:
            self.removed.add(pg_hex)
            self._stop_group_work(pg_hex)
        self.ledger.release(pg_hex, None if indices is None else set(indices))
        self._published()
        self.node._apply(self.node.scheduler.dispatch())
        return True

    def _stop_group_work(self, pg_hex: str) -> None:
        node = self.node
        for worker in list(node.pool.workers.values()):
            lease = worker.lease
            if lease is not None and pg_of_shape(lease["allocation"].amounts) == pg_hex:
                node.pool.kill(worker)
                node._release_lease(worker)
                node.pool.remove(worker)
        self.fail_requests({pg_hex})

    def fail_requests(self, groups: set[str]) -> None:
        """Answer queued and granted-but-waiting requests of removed groups."""
        node = self.node
        for req in list(node.scheduler.queue):
            pg_hex = pg_of_shape(req.shape)
            if pg_hex in groups:
                node.scheduler.cancel(req.request_id)
                entry = node.pending.pop(req.request_id, None)
                if entry is not None:
                    entry[1].resolve(removed_reply(pg_hex))
        still = []
        for grant, deferred, peer in node.waiting_for_worker:
            pg_hex = pg_of_shape(grant.request.shape)
            if pg_hex in groups:
                node.resources.release(grant.allocation)
                deferred.resolve(removed_reply(pg_hex))
            else:
                still.append((grant, deferred, peer))
        node.waiting_for_worker = still

    def check_queued(self) -> None:
        """Requests queued here for groups that were removed elsewhere (this node held
        none of their bundles, so no cancel reached it): fail them. Heartbeat period."""
        groups = {pg_of_shape(req.shape) for req in self.node.scheduler.queue} - {None}
        if not groups:
            return
        gone = set()
        for pg_hex in groups:
            record = self.node.gcs.hget_obj(keys.PLACEMENT_GROUPS, pg_hex)
            if pg_hex in self.removed or record is None or record.get("state") == REMOVED:
                gone.add(pg_hex)
        if gone:
            self.fail_requests(gone)

    def gpu_ids(self, allocation):
        return self.ledger.gpu_ids(allocation)


class PlacementGroupManager:
    """The head raylet's placement-group authority.

    A head that starts over a GCS that already holds groups (a restarted head: the
    Redis outlived it, or reloaded its append-only file) first recovers: it loads
    every record, asks each live node which bundles it holds, gives back what no record
    places there (prepared or committed before the crash, by an interrupted attempt or
    for a group removed meanwhile), and sends bundles of dead nodes (the old head's) back
    to RESCHEDULING. Until then it places nothing."""

    def __init__(self, node):
        self.node = node
        self.gcs = node.gcs
        self.groups: dict[str, dict] = {}
        self._peers: dict[str, object] = {}
        self._running = False
        self._again = False
        self._recovering = False
        self._jobs_checked_at = 0.0

    # -- a restarted head ------------------------------------------------------------------
    async def recover(self) -> None:
        self._recovering = True
        try:
            await self._recover()
        except Exception:  # noqa: BLE001 - logged; the records stay as loaded
            logger.exception("placement groups: recovery failed; scheduling what was loaded")
        finally:
            self._recovering = False
        self.kick()

    async def _recover(self) -> None:
        records = self.gcs.hgetall_obj(keys.PLACEMENT_GROUPS)
        for pg_hex, record in records.items():
            self.groups.setdefault(pg_hex, record)  # a group created since we started wins
        nodes = self.gcs.hgetall_obj(keys.NODES)
        alive = [node_id for node_id, info in nodes.items() if info.get("alive", True)]
        held: dict[str, dict[str, list]] = {}
        for node_id in alive:
            try:
                held[node_id] = await self._call(node_id, "held_bundles")
            except Exception as exc:  # noqa: BLE001 - its heartbeat decides whether it is dead
                logger.warning("placement groups: node %s did not say which bundles it "
                               "holds (%s); trusting the records for it", node_id[:8], exc)
        for node_id, groups in held.items():
            for pg_hex, bundles in groups.items():
                record = self.groups.get(pg_hex)
                if record is None or record["state"] == REMOVED:
                    await self._call_quietly(node_id, "cancel_bundles", pg_hex, None, True)
                    continue
                stray = [int(i) for i, committed in bundles
                         if not committed or record["bundle_nodes"][int(i)] != node_id]
                if stray:
                    await self._call_quietly(node_id, "cancel_bundles", pg_hex, stray, False)
        recovered = 0
        for record in self.groups.values():
            if record["state"] == REMOVED:
                continue
            recovered += 1
            lost = []
            for i, node_id in enumerate(record["bundle_nodes"]):
                on_node = held.get(node_id) if node_id else None
                if node_id and (node_id not in alive or on_node is not None and i not in [
                        int(j) for j, committed in on_node.get(record["placement_group_id"], [])
                        if committed]):
                    lost.append(i)
            for i in lost:
                record["bundle_nodes"][i] = None
            if lost and record["state"] == CREATED:
                record["state"] = RESCHEDULING
            if lost:
                logger.warning("placement group %s: bundles %s were on nodes that are gone; "
                               "rescheduling them", record["placement_group_id"][:8], lost)
                self._save(record)
        if recovered:
            logger.info("placement groups: recovered %d live groups from the GCS", recovered)

    def handlers(self) -> dict:
        return {
            "create_placement_group": self.h_create,
            "remove_placement_group": self.h_remove,
        }

    # -- requests ------------------------------------------------------------------------
    def h_create(self, peer, wire) -> list:
        """``create_placement_group(CreatePlacementGroup)``: a PlacementGroupReply."""
        request = CreatePlacementGroup.from_wire(wire)
        pg_hex = request.placement_group_id
        bundles = request.bundles
        if not bundles or request.strategy not in STRATEGIES:
            raise ValueError(f"bad placement group request {request!r}")
        name, namespace = request.name, request.namespace or "default"
        if name:
            key = keys.named_placement_group(namespace, name)
            existing = self.gcs.get(key)
            if existing is not None:
                other = self.groups.get(existing.decode())
                if other is not None and other["state"] != REMOVED:
                    return PlacementGroupRefused(PlacementGroupRefused.NAME_TAKEN, (
                        f"a placement group named {name!r} already exists in namespace "
                        f"{namespace!r}; pick another name or use "
                        f"ray.util.get_placement_group({name!r}).")).to_wire()
            self.gcs.set(key, pg_hex.encode())
        record = {
            "placement_group_id": pg_hex, "name": name, "namespace": namespace,
            "strategy": request.strategy, "bundles": bundles,
            "bundle_nodes": [None] * len(bundles), "state": PENDING,
            "job_id": request.job_id, "detached": request.detached,
            "creator_pid": request.pid, "created_at": time.time(), "scheduled_at": None,
            "soft_target": request.soft_target,
        }
        self.groups[pg_hex] = record
        self._save(record)
        self.kick()
        return PlacementGroupAccepted().to_wire()

    def h_remove(self, peer, pg_hex: str) -> list:
        """``remove_placement_group(group id hex)``: a PlacementGroupReply."""
        record = self.groups.get(pg_hex)
        if record is None:
            return PlacementGroupRefused(PlacementGroupRefused.UNKNOWN_GROUP, (
                f"no placement group {pg_hex}: it was never created in this cluster")).to_wire()
        self.remove(record)
        return PlacementGroupAccepted().to_wire()

    def remove(self, record: dict) -> None:
        if record["state"] == REMOVED:
            return
        nodes = {n for n in record["bundle_nodes"] if n}
        record["state"] = REMOVED
        record["bundle_nodes"] = [None] * len(record["bundles"])
        record["removed_at"] = time.time()
        if record["name"]:
            key = keys.named_placement_group(record["namespace"], record["name"])
            if self.gcs.get(key) == record["placement_group_id"].encode():
                self.gcs.delete(key)
        self._save(record)
        pg_hex = record["placement_group_id"]
        for node_id in nodes:
            self.node.loop.create_task(self._call_quietly(node_id, "cancel_bundles", pg_hex))
        # Requests queued on the head for this group fail now, not at the next heartbeat.
        self.node.bundles.fail_requests({pg_hex})

    # -- placing -----------------------------------------------------------------------------
    def kick(self) -> None:
        if self._running or self._recovering:
            self._again = True
            return
        self._running = True
        self.node.loop.create_task(self._schedule_all())

    async def _schedule_all(self) -> None:
        try:
            while True:
                self._again = False
                for record in list(self.groups.values()):
                    if record["state"] in (PENDING, RESCHEDULING):
                        await self._try_place(record)
                if not self._again:
                    return
        except Exception:
            logger.exception("placement group scheduling failed; retrying at the next tick")
        finally:
            self._running = False

    def _views(self) -> dict[str, dict[str, float]]:
        node = self.node
        views = {node.node_id: node.resources.available_dict()}
        for node_id, remote in node.scheduler.remote.items():
            views[node_id] = remote.available
        return views

    async def _try_place(self, record: dict) -> None:
        pg_hex = record["placement_group_id"]
        fixed = {i: n for i, n in enumerate(record["bundle_nodes"]) if n}
        views = self._views()
        plan = place_bundles(record["bundles"], record["strategy"], views, fixed,
                             prefer=record.get("soft_target"))
        if not plan:
            return
        by_node: dict[str, list[int]] = {}
        for index, node_id in plan.items():
            by_node.setdefault(node_id, []).append(index)
        order = list(by_node)
        prepared = await asyncio.gather(*[
            self._call(node_id, "prepare_bundles", pg_hex,
                       [[i, record["bundles"][i]] for i in by_node[node_id]])
            for node_id in order], return_exceptions=True)
        ok = all(result is True for result in prepared)
        if ok and record["state"] != REMOVED:
            committed = await asyncio.gather(*[
                self._call(node_id, "commit_bundles", pg_hex) for node_id in order],
                return_exceptions=True)
            ok = all(result is True for result in committed)
        if not ok or record["state"] == REMOVED:
            for node_id, result in zip(order, prepared, strict=True):
                if result is True:  # only what this attempt took
                    await self._call_quietly(node_id, "cancel_bundles", pg_hex,
                                             by_node[node_id], False)
            logger.info("placement group %s: reservation on %s failed (%s); will retry",
                        pg_hex[:8], order, prepared)
            return
        for index, node_id in plan.items():
            record["bundle_nodes"][index] = node_id
            remote = self.node.scheduler.remote.get(node_id)
            if remote is not None:  # until its next heartbeat says so itself
                for k, v in record["bundles"][index].items():
                    remote.available[k] = remote.available.get(k, 0) - v
        record["state"] = CREATED
        record["scheduled_at"] = time.time()
        self._save(record)

    def pending_bundles(self) -> list[dict]:
        """Bundles still waiting for a node (the autoscaler's demand)."""
        return [dict(record["bundles"][i]) for record in self.groups.values()
                if record["state"] in (PENDING, RESCHEDULING)
                for i, node in enumerate(record["bundle_nodes"]) if node is None]

    # -- periodic (head heartbeat) ---------------------------------------------------------
    def tick(self, nodes: dict, now: float) -> None:
        alive = {node_id for node_id, info in nodes.items() if info.get("alive", True)}
        for record in self.groups.values():
            if record["state"] not in (CREATED, RESCHEDULING):
                continue
            lost = [i for i, n in enumerate(record["bundle_nodes"]) if n and n not in alive]
            if lost:
                logger.warning("placement group %s lost bundles %s with their node; "
                               "rescheduling them", record["placement_group_id"][:8], lost)
                for i in lost:
                    record["bundle_nodes"][i] = None
                record["state"] = RESCHEDULING
                self._save(record)
        if now - self._jobs_checked_at > _JOB_CHECK_PERIOD_S:
            self._jobs_checked_at = now
            self._remove_finished_jobs_groups()
        if any(r["state"] in (PENDING, RESCHEDULING) for r in self.groups.values()):
            self.kick()

    def _remove_finished_jobs_groups(self) -> None:
        live = [r for r in self.groups.values() if r["state"] != REMOVED and not r["detached"]]
        if not live:
            return
        jobs = self.gcs.hgetall_obj(keys.JOBS)
        for record in live:
            job = jobs.get(record["job_id"])
            if job is not None and not job.get("alive", True):
                logger.info("job %s finished: removing its placement group %s",
                            record["job_id"], record["placement_group_id"][:8])
                self.remove(record)

    # -- I/O -----------------------------------------------------------------------------------
    def _save(self, record: dict) -> None:
        self.gcs.hset_obj(keys.PLACEMENT_GROUPS, record["placement_group_id"], record)
        self.gcs.publish_obj(keys.CHANNEL_PLACEMENT_GROUPS, {
            "placement_group_id": record["placement_group_id"], "state": record["state"]})

    async def _call(self, node_id: str, method: str, *args):
        if node_id == self.node.node_id:
            return self.node.bundles.handlers()[method](None, *args)
        peer = self._peers.get(node_id)
        if peer is None or peer.closed:
            info = self.gcs.hget_obj(keys.NODES, node_id) or {}
            if not info.get("alive", True) or not info.get("raylet_port"):
                raise ConnectionError(f"node {node_id[:8]} is not alive")
            address = (info["node_ip"], info["raylet_port"])
            peer = await asyncio.wait_for(
                aio.open_connection(address, {}, "raylet-pg"), _RPC_TIMEOUT_S)
            self._peers[node_id] = peer
        return await asyncio.wait_for(aio.wrap(peer.call(method, *args)), _RPC_TIMEOUT_S)

    async def _call_quietly(self, node_id: str, method: str, *args):
        try:
            return await self._call(node_id, method, *args)
        except Exception as exc:  # noqa: BLE001 - logged; a dead node's resources are gone with it
            logger.info("placement group: %s on node %s failed: %s", method, node_id[:8], exc)
            return None
