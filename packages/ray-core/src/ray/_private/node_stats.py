"""Per-node utilisation samples: what ``ray status`` and the dashboard's metrics show.

Each raylet samples its machine and its own accounting once per ``SAMPLE_PERIOD_S``
(``report_loop``): host CPU %, memory used/total, object-store bytes used/capacity, and
the CPUs its leases hold (Ray's "busy cores"). A sample is one msgpack element of the
GCS list ``ray:node_stats:<node id>``, trimmed to the newest ``MAX_SAMPLES`` (10 minutes),
so the dashboard draws time series without keeping any state of its own.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time

import msgpack
import psutil

from ray._private.gcs import keys

SAMPLE_PERIOD_S = 1.0
MAX_SAMPLES = 600

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class NodeSample:
    time: float
    cpu_percent: float  # the host's, all cores (0-100)
    num_cpus_busy: float  # CPUs held by leases (resources total - available)
    num_cpus: float  # the node's CPU resource
    mem_used_bytes: int
    mem_total_bytes: int
    object_store_used_bytes: int
    object_store_capacity_bytes: int

    def to_wire(self) -> bytes:
        return msgpack.packb(dataclasses.astuple(self), use_bin_type=True)

    @classmethod
    def from_wire(cls, data: bytes) -> NodeSample:
        return cls(*msgpack.unpackb(data, raw=False))


def sample(resources, store, clock=time.time) -> NodeSample:
    """One sample of this machine and of the raylet's ``resources`` and plasma ``store``."""
    mem = psutil.virtual_memory()
    total = resources.total_dict().get("CPU", 0.0)
    available = resources.available_dict().get("CPU", 0.0)
    return NodeSample(
        time=clock(), cpu_percent=psutil.cpu_percent(None), num_cpus_busy=max(0.0, total - available),
        num_cpus=total, mem_used_bytes=mem.total - mem.available, mem_total_bytes=mem.total,
        object_store_used_bytes=int(store.used_bytes), object_store_capacity_bytes=int(store.capacity_bytes))


def publish(gcs, node_id: str, one: NodeSample) -> None:
    gcs.rpush_many(keys.node_stats(node_id), [one.to_wire()], max_len=MAX_SAMPLES)


def read_series(gcs, node_id: str, last: int | None = None) -> list[NodeSample]:
    raw = gcs.lrange(keys.node_stats(node_id), -last if last else 0, -1)
    return [NodeSample.from_wire(item) for item in raw]


def latest(gcs, node_id: str) -> NodeSample | None:
    series = read_series(gcs, node_id, last=1)
    return series[-1] if series else None


async def report_loop(gcs, node_id: str, resources, store, stopping) -> None:
    """The raylet's sampler: one sample per period until ``stopping()``."""
    psutil.cpu_percent(None)  # the first reading only starts the measurement
    failed = False
    # The first sample comes after half a second (enough for a CPU reading), so `ray
    # status -v` and the dashboard show a node's host figures soon after it starts.
    delay = min(0.5, SAMPLE_PERIOD_S)
    while not stopping():
        await asyncio.sleep(delay)
        delay = SAMPLE_PERIOD_S
        try:
            publish(gcs, node_id, sample(resources, store))
            failed = False
        except Exception as exc:  # noqa: BLE001 - the GCS may be restarting; heartbeats say so
            if not failed:
                logger.debug("node stats not published: %s", exc)
            failed = True


__all__ = ["MAX_SAMPLES", "SAMPLE_PERIOD_S", "NodeSample", "latest", "publish", "read_series",
           "report_loop", "sample"]
