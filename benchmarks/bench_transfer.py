"""Node-to-node object transfer rate: a 1 GB object made on one node, read on another.

Two real raylets on this machine (ray.cluster_utils.Cluster) move the object over
TCP through their object managers. Prints JSON.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

import ray
from ray.cluster_utils import Cluster


def main(size: int = 10**9) -> None:
    cluster = Cluster()
    cluster.add_node(num_cpus=1, object_store_memory=int(size * 1.5))
    cluster.add_node(num_cpus=1, object_store_memory=int(size * 1.5), resources={"far": 1})
    ray.init(address=cluster.address)
    try:
        @ray.remote(resources={"far": 1})
        def make(n):
            return np.ones(n, dtype=np.uint8)

        @ray.remote(resources={"far": 1})
        def touch(a):
            return int(a[-1])

        ref = make.remote(size)
        ray.wait([ref])
        t0 = time.perf_counter()
        value = ray.get(ref)  # pulled into the driver's node
        seconds = time.perf_counter() - t0
        assert value[-1] == 1
        print(json.dumps({"bytes": size, "seconds": seconds,
                          "transfer_gb_per_s": size / seconds / 1e9}, indent=2))
        del value, ref
    finally:
        cluster.shutdown()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10**9)
