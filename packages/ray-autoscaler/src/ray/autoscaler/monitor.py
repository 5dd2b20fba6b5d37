"""The autoscaling monitor process that runs on the head node.

    python -m ray.autoscaler.monitor --autoscaling-config ~/ray_bootstrap_config.yaml \
        [--redis-address HOST:PORT | --load-file PATH] [--interval-s 5] [--log-file PATH]

``ray start --head --autoscaling-config=...`` (ray-core) starts it; it logs each
decision to ``<session>/logs/monitor.log`` (``ray monitor cluster.yaml`` tails it) and,
with ``--redis-address``, publishes each round's ``ray.state.AutoscalerStatus`` to the
GCS for ``ray status`` (also when the load comes from ``--load-file``).
The config file is re-read every round, so ``ray up --max-workers N --no-restart``
takes effect without a restart.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time

from ray.autoscaler.autoscaler import Monitor, StandardAutoscaler
from ray.autoscaler.config import load_config
from ray.autoscaler.load import file_load_source, gcs_load_source
from ray.autoscaler.node_provider import get_node_provider
from ray.autoscaler.tags import NODE_KIND_HEAD, TAG_RAY_NODE_KIND


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m ray.autoscaler.monitor")
    parser.add_argument("--autoscaling-config", required=True)
    parser.add_argument("--redis-address", default=None)
    parser.add_argument("--load-file", default=None, help="read ClusterLoad JSON from this file")
    parser.add_argument("--interval-s", type=float, default=5.0)
    parser.add_argument("--log-file", default=None)
    parser.add_argument("--max-rounds", type=int, default=None)
    return parser.parse_args(argv)


def _gcs_status_reporter(address: str):
    """Each round's status into the cluster's GCS (the secret: $RAY_REDIS_PASSWORD)."""
    from ray.state import report_autoscaler_status

    return lambda status: report_autoscaler_status(status, address)


def main(argv=None) -> int:
    args = parse_args(argv)
    handlers = [logging.StreamHandler(sys.stdout)]
    if args.log_file:
        os.makedirs(os.path.dirname(os.path.abspath(args.log_file)), exist_ok=True)
        handlers.append(logging.FileHandler(args.log_file))
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", handlers=handlers
    )
    log = logging.getLogger("ray.autoscaler.monitor")
    path = os.path.expanduser(args.autoscaling_config)
    config = load_config(path)
    provider = get_node_provider(config.provider, config.cluster_name)
    load_source = (
        file_load_source(args.load_file) if args.load_file else gcs_load_source(args.redis_address)
    )
    autoscaler = StandardAutoscaler(
        lambda: load_config(path), provider, load_source, clock=time.monotonic, log=log.info
    )
    monitor = Monitor(
        autoscaler,
        interval_s=args.interval_s,
        log=log.info,
        head_alive=lambda: bool(provider.non_terminated_nodes({TAG_RAY_NODE_KIND: NODE_KIND_HEAD})),
        report_status=_gcs_status_reporter(args.redis_address) if args.redis_address else None,
    )
    signal.signal(signal.SIGTERM, lambda *_: monitor.stop())
    log.info(
        "monitor started for cluster %s (%s provider)", config.cluster_name, config.provider["type"]
    )
    try:
        monitor.run(max_rounds=args.max_rounds)
    except KeyboardInterrupt:
        pass
    autoscaler.wait_for_updaters(timeout_s=30)
    provider.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
