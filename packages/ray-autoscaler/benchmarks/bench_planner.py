"""How long one planning round takes as the cluster and the queue grow; prints JSON.

.venv/bin/python packages/ray-autoscaler/benchmarks/bench_planner.py
"""

from __future__ import annotations

import json
import time

from ray.autoscaler.planner import ClusterSnapshot, NodeType, NodeView, ScalingPolicy, plan

TYPES = {
    "cpu2": NodeType("cpu2", {"CPU": 2}),
    "cpu8": NodeType("cpu8", {"CPU": 8}),
    "gpu1": NodeType("gpu1", {"CPU": 4, "GPU": 1}),
}


def scenario(n_nodes: int, n_demand: int) -> tuple[ClusterSnapshot, ScalingPolicy]:
    nodes = [NodeView("head", "head", is_head=True, total={"CPU": 0}, available={"CPU": 0})]
    nodes += [
        NodeView(f"w{i}", "cpu8", total={"CPU": 8}, available={"CPU": i % 3},
                 idle_since_s=None if i % 2 else 0.0)
        for i in range(n_nodes)
    ]  # fmt: skip
    demand = tuple({"CPU": 1} if i % 5 else {"CPU": 2, "GPU": 1} for i in range(n_demand))
    policy = ScalingPolicy(max_workers=n_nodes * 3, idle_timeout_s=60)
    return ClusterSnapshot(tuple(nodes), demand, now_s=1000.0), policy


def main() -> None:
    results = []
    for n_nodes, n_demand in [(10, 100), (100, 1_000), (1_000, 10_000)]:
        snap, policy = scenario(n_nodes, n_demand)
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            result = plan(snap, TYPES, policy)
            times.append(time.perf_counter() - t0)
        results.append(
            {
                "nodes": n_nodes,
                "queued_bundles": n_demand,
                "plan_ms_median": round(sorted(times)[1] * 1000, 2),
                "launch": dict(result.launch),
                "terminate": len(result.terminate),
            }
        )
    print(json.dumps({"benchmark": "autoscaler_planner", "results": results}, indent=1))


if __name__ == "__main__":
    main()
