"""The monitor's decision loop body: provider + load -> snapshot -> plan -> actions.

:class:`StandardAutoscaler.update` is one round. It reads the nodes (from the
provider's tags) and the load (from a :class:`~ray.autoscaler.load.LoadSource`),
tracks how long each node has been idle, asks the pure planner what to do, and
then launches nodes, terminates nodes, and starts a :class:`NodeUpdater` thread
for each worker that is new or runs stale commands. The clock is injected.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from ray.autoscaler.command_runner import CommandRunner, DockerCommandRunner
from ray.autoscaler.config import ClusterConfig, hash_launch_config, hash_runtime_config
from ray.autoscaler.load import ClusterLoad, LoadSource
from ray.autoscaler.node_provider import NodeProvider
from ray.autoscaler.planner import (
    ClusterSnapshot,
    NodeType,
    NodeView,
    ScalingPlan,
    ScalingPolicy,
    plan,
)
from ray.autoscaler.tags import (
    NODE_KIND_HEAD,
    NODE_KIND_WORKER,
    STATUS_UNINITIALIZED,
    STATUS_UP_TO_DATE,
    STATUS_UPDATE_FAILED,
    TAG_RAY_LAUNCH_CONFIG,
    TAG_RAY_NODE_KIND,
    TAG_RAY_NODE_NAME,
    TAG_RAY_NODE_STATUS,
    TAG_RAY_RUNTIME_CONFIG,
    TAG_RAY_USER_NODE_TYPE,
)
from ray.autoscaler.updater import NodeUpdater, NodeUpdaterThread, UpdatePlan
from ray.state import AutoscalerFailure, AutoscalerNode, AutoscalerStatus

logger = logging.getLogger(__name__)

# An infeasible shape is warned about again only after this long.
_WARN_AGAIN_S = 300.0
# How many recent failures the status keeps.
_FAILURES_KEPT = 20


def make_command_runner(
    config: ClusterConfig, provider: NodeProvider, node_id: str, process_runner=None
) -> CommandRunner:
    runner = provider.get_command_runner(
        node_id,
        config.auth,
        use_internal_ip=bool(config.provider.get("use_internal_ips", False)),
        process_runner=process_runner,
    )
    if config.docker.get("image"):
        return DockerCommandRunner(runner, config.docker)
    return runner


def worker_update_plan(config: ClusterConfig, head_ip: str) -> UpdatePlan:
    return UpdatePlan(
        file_mounts=dict(config.file_mounts),
        initialization_commands=config.initialization_commands,
        setup_commands=config.setup_commands + config.worker_setup_commands,
        start_commands=config.worker_start_ray_commands,
        runtime_hash=hash_runtime_config(config, head=False),
        # The monitor inherits the cluster secret from `ray start --head`; workers' `ray start`
        # reads it from $RAY_REDIS_PASSWORD (their --redis-password default).
        env={"RAY_HEAD_IP": head_ip, **_secret_env()},
    )


def _secret_env() -> dict:
    secret = os.environ.get("RAY_REDIS_PASSWORD")
    return {"RAY_REDIS_PASSWORD": secret} if secret else {}


class StandardAutoscaler:
    def __init__(
        self,
        config: ClusterConfig | Callable[[], ClusterConfig],
        provider: NodeProvider,
        load_source: LoadSource,
        *,
        clock: Callable[[], float] = time.monotonic,
        process_runner: Any = None,
        updater_kwargs: Mapping[str, Any] | None = None,
        log: Callable[[str], None] | None = None,
        wall_clock: Callable[[], float] = time.time,
    ):
        self._config_source = config if callable(config) else (lambda: config)
        self.config = self._config_source()
        self.provider = provider
        self.load_source = load_source
        self.clock = clock
        self.process_runner = process_runner
        self.updater_kwargs = dict(updater_kwargs or {})
        self.log = log or (lambda msg: logger.info("%s", msg))
        self.updaters: dict[str, NodeUpdaterThread] = {}
        # Learned sizes of node types the config does not size (legacy worker_nodes).
        self.learned_resources: dict[str, dict[str, float]] = {}
        self._busy_until: dict[str, float] = {}
        self._warned: dict[tuple, float] = {}
        self._first_round = True
        self.last_plan: ScalingPlan | None = None
        self.wall_clock = wall_clock
        self._failures: collections.deque[AutoscalerFailure] = collections.deque(
            maxlen=_FAILURES_KEPT)
        self._last_load = ClusterLoad()

    # ---------------------------------------------------------------- one round
    def update(self) -> ScalingPlan:
        try:
            self.config = self._config_source()
        except Exception as e:  # noqa: BLE001 - keep the last good config running
            self.log(f"config reload failed, keeping the previous one: {e}")
        now = self.clock()
        load = self._last_load = self.load_source()
        node_ids = self.provider.non_terminated_nodes({})
        tags = {n: self.provider.node_tags(n) for n in node_ids}
        self._reap_updaters()
        # Workers whose setup failed go first, so the plan replaces them this round.
        failed = self._terminate_failed(node_ids, tags)
        node_ids = [n for n in node_ids if n not in failed]
        snapshot = self._snapshot(node_ids, tags, load, now)
        result = plan(snapshot, self._node_types(), self._policy())
        self._first_round = False
        self._warn_infeasible(result, now)
        if result.num_launches or result.terminate:
            # Logged before acting: whoever sees a node come or go finds the decision in
            # the log already.
            self.log(
                f"launching {dict(result.launch)}, terminating {list(result.terminate)}"
                + (f" ({'; '.join(result.reasons)})" if result.reasons else "")
            )
        self._terminate(result.terminate)
        self._launch(result.launch)
        if result.num_launches or result.terminate:
            # Set up the nodes just launched in this same round.
            node_ids = self.provider.non_terminated_nodes({})
            tags = {n: self.provider.node_tags(n) for n in node_ids}
        self._start_updaters(tags)
        self.last_plan = result
        return result

    def status(self, update_interval_s: float = 0.0) -> AutoscalerStatus:
        """The last round as ``ray status`` shows it (provider tags + the load it saw)."""
        active, pending, managed_ips = [], [], set()
        for node_id in self.provider.non_terminated_nodes({}):
            t = self.provider.node_tags(node_id)
            ip = self.provider.internal_ip(node_id) or ""
            managed_ips.add(ip)
            kind, status = t.get(TAG_RAY_NODE_KIND), t.get(TAG_RAY_NODE_STATUS) or ""
            node = AutoscalerNode(node_id, t.get(TAG_RAY_USER_NODE_TYPE) or kind or "node", ip,
                                  status or ("up-to-date" if kind == NODE_KIND_HEAD
                                             else STATUS_UNINITIALIZED))
            if kind == NODE_KIND_HEAD or status == STATUS_UP_TO_DATE:
                active.append(node)
            elif status != STATUS_UPDATE_FAILED:
                pending.append(node)
        # Nodes that report load but were not launched by this provider (a head started
        # by hand, say): Ray lists such nodes as node_<id>.
        active += [AutoscalerNode("", f"node_{n.ip}", n.ip, "unmanaged")
                   for n in self._last_load.nodes if n.ip not in managed_ips]
        plan_ = self.last_plan
        return AutoscalerStatus(
            time_s=self.wall_clock(), cluster_name=self.config.cluster_name,
            update_interval_s=update_interval_s, active_nodes=tuple(active),
            pending_nodes=tuple(pending), failed_nodes=tuple(self._failures),
            pending_demand=tuple(dict(b) for b in self._last_load.demand),
            infeasible_demand=tuple(dict(b) for b in plan_.infeasible) if plan_ else (),
            launched=dict(plan_.launch) if plan_ else {})

    def _policy(self) -> ScalingPolicy:
        c = self.config
        low = max(c.min_workers, c.initial_workers) if self._first_round else c.min_workers
        return ScalingPolicy(
            min_workers=low,
            max_workers=c.max_workers,
            idle_timeout_s=c.idle_timeout_s,
            target_utilization_fraction=c.target_utilization_fraction,
            upscaling_speed=c.upscaling_speed,
        )

    def _node_types(self) -> dict[str, NodeType]:
        return {
            name: NodeType(
                name=name,
                resources=t.resources
                if t.resources is not None
                else self.learned_resources.get(name),
                min_workers=t.min_workers,
                max_workers=t.max_workers,
            )
            for name, t in self.config.worker_node_types.items()
        }

    def _snapshot(self, node_ids, tags, load: ClusterLoad, now: float) -> ClusterSnapshot:
        by_ip = load.by_ip()
        views = []
        for node_id in node_ids:
            t = tags[node_id]
            node_type = t.get(TAG_RAY_USER_NODE_TYPE, "")
            is_head = t.get(TAG_RAY_NODE_KIND) == NODE_KIND_HEAD
            reported = by_ip.get(self.provider.internal_ip(node_id) or "")
            up = t.get(TAG_RAY_NODE_STATUS) == STATUS_UP_TO_DATE
            if reported is None or not (up or is_head):
                views.append(NodeView(node_id, node_type, is_head=is_head, pending=True))
                continue
            if node_type and reported.total:
                self.learned_resources.setdefault(node_type, dict(reported.total))
            if reported.busy or node_id not in self._busy_until:
                self._busy_until[node_id] = now
            idle_since = None if reported.busy else self._busy_until[node_id]
            views.append(
                NodeView(
                    node_id,
                    node_type,
                    is_head=is_head,
                    total=reported.total,
                    available=reported.available,
                    idle_since_s=idle_since,
                )
            )
        for gone in set(self._busy_until) - set(node_ids):
            del self._busy_until[gone]
        return ClusterSnapshot(nodes=tuple(views), demand=load.demand, now_s=now)

    # ---------------------------------------------------------------- actions
    def _warn_infeasible(self, result: ScalingPlan, now: float) -> None:
        for bundle in result.infeasible:
            shape = tuple(sorted(bundle.items()))
            if now - self._warned.get(shape, -_WARN_AGAIN_S) >= _WARN_AGAIN_S:
                self._warned[shape] = now
                msg = (
                    f"resource demand {dict(bundle)} fits no node type "
                    f"({', '.join(self._describe_types())}): it will never be scheduled; "
                    "add a node type that can hold it or make the request smaller"
                )
                logger.warning("%s", msg)
                self.log("WARNING: " + msg)

    def _describe_types(self) -> list[str]:
        return [f"{n}={dict(t.resources or {})}" for n, t in self._node_types().items()]

    def _launch(self, launch: Mapping[str, int]) -> None:
        for node_type, count in sorted(launch.items()):
            node_config = self.config.node_types[node_type].node_config
            tags = {
                TAG_RAY_NODE_KIND: NODE_KIND_WORKER,
                TAG_RAY_USER_NODE_TYPE: node_type,
                TAG_RAY_NODE_NAME: f"ray-{self.config.cluster_name}-worker",
                TAG_RAY_NODE_STATUS: STATUS_UNINITIALIZED,
                TAG_RAY_LAUNCH_CONFIG: hash_launch_config(node_config, self.config.auth),
            }
            try:
                self.provider.create_node(node_config, tags, count)
            except Exception as e:  # noqa: BLE001 - a refused launch is retried next round
                self.log(f"launching {count} x {node_type} failed: {e}")

    def _terminate(self, node_ids) -> None:
        for node_id in node_ids:
            if node_id in self.updaters:
                continue
            if self.provider.nodes_outlive_termination:
                self._stop_ray_on(node_id)
            self.provider.terminate_node(node_id)
            self._busy_until.pop(node_id, None)

    def _stop_ray_on(self, node_id: str) -> None:
        try:
            make_command_runner(self.config, self.provider, node_id, self.process_runner).run(
                "ray stop", timeout_s=60
            )
        except Exception as e:  # noqa: BLE001 - best effort: the node is released anyway
            self.log(f"ray stop on {node_id} failed: {e}")

    def _terminate_failed(self, node_ids, tags) -> list[str]:
        failed = [
            n
            for n in node_ids
            if tags[n].get(TAG_RAY_NODE_STATUS) == STATUS_UPDATE_FAILED
            and tags[n].get(TAG_RAY_NODE_KIND) == NODE_KIND_WORKER
            and n not in self.updaters
        ]
        if failed:
            self.log(f"terminating workers whose setup failed: {failed}")
            for n in failed:
                self._failures.append(AutoscalerFailure(
                    tags[n].get(TAG_RAY_USER_NODE_TYPE, ""), self.provider.internal_ip(n) or "",
                    self.wall_clock()))
            self._terminate(failed)
        return failed

    def _head_ip(self) -> str:
        heads = self.provider.non_terminated_nodes({TAG_RAY_NODE_KIND: NODE_KIND_HEAD})
        return (self.provider.internal_ip(heads[0]) or "") if heads else ""

    def _start_updaters(self, tags) -> None:
        wanted_hash = hash_runtime_config(self.config, head=False)
        head_ip = None
        for node_id, t in tags.items():
            if t.get(TAG_RAY_NODE_KIND) != NODE_KIND_WORKER or node_id in self.updaters:
                continue
            status = t.get(TAG_RAY_NODE_STATUS)
            stale = status == STATUS_UP_TO_DATE and t.get(TAG_RAY_RUNTIME_CONFIG) != wanted_hash
            if status != STATUS_UNINITIALIZED and not stale:
                continue
            if not self.provider.is_running(node_id):
                continue
            if head_ip is None:
                head_ip = self._head_ip()
            updater = NodeUpdater(
                node_id,
                self.provider,
                make_command_runner(self.config, self.provider, node_id, self.process_runner),
                worker_update_plan(self.config, head_ip),
                log=self.log,
                **self.updater_kwargs,
            )
            thread = NodeUpdaterThread(updater)
            self.updaters[node_id] = thread
            thread.start()

    def _reap_updaters(self) -> None:
        for node_id, thread in list(self.updaters.items()):
            if not thread.is_alive():
                del self.updaters[node_id]

    def wait_for_updaters(self, timeout_s: float | None = None) -> None:
        """Join running updater threads (tests, shutdown)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        for thread in list(self.updaters.values()):
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            thread.join(remaining)
        self._reap_updaters()


class Monitor:
    """Runs ``autoscaler.update()`` every ``interval_s`` until stopped; never dies of one error.

    It stops by itself once the cluster's head node, having been seen, is gone
    (``ray down``): a monitor outliving its cluster would relaunch min_workers.
    """

    def __init__(
        self,
        autoscaler: StandardAutoscaler,
        *,
        interval_s: float = 5.0,
        log: Callable[[str], None] | None = None,
        head_alive: Callable[[], bool] | None = None,
        report_status: Callable[[AutoscalerStatus], None] | None = None,
    ):
        self.autoscaler = autoscaler
        self.interval_s = interval_s
        self.log = log or (lambda msg: logger.info("%s", msg))
        self.head_alive = head_alive
        # Where each round's AutoscalerStatus goes (``ray status`` reads it from the GCS).
        self.report_status = report_status
        self._report_failing = False
        self._stop = threading.Event()
        self._head_seen = False

    def run(self, max_rounds: int | None = None) -> None:
        rounds = 0
        while not self._stop.is_set() and (max_rounds is None or rounds < max_rounds):
            if self._cluster_gone():
                self.log("the head node is gone (ray down?): monitor exiting")
                return
            try:
                self.autoscaler.update()
            except Exception as e:  # noqa: BLE001 - the monitor outlives a bad round
                self.log(f"autoscaler round failed: {type(e).__name__}: {e}")
            else:
                self._report()
            rounds += 1
            self._stop.wait(self.interval_s)

    def _report(self) -> None:
        if self.report_status is None:
            return
        try:
            self.report_status(self.autoscaler.status(self.interval_s))
        except Exception as e:  # noqa: BLE001 - logged once per outage; scaling goes on
            if not self._report_failing:
                self.log(f"could not publish the autoscaler status: {type(e).__name__}: {e}")
            self._report_failing = True
        else:
            self._report_failing = False

    def _cluster_gone(self) -> bool:
        if self.head_alive is None:
            return False
        try:
            alive = self.head_alive()
        except Exception:  # noqa: BLE001 - a provider hiccup is not a teardown
            return False
        self._head_seen |= alive
        return self._head_seen and not alive

    def stop(self) -> None:
        self._stop.set()
