"""Entry point of the raylet process: ``python -m ray._private.raylet.main ...``."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys

from ray._private.config import build_config
from ray._private.gcs import connect


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="ray node daemon (raylet)")
    p.add_argument("--node-id", required=True)
    p.add_argument("--node-ip", required=True)
    p.add_argument("--gcs-address", required=True)
    p.add_argument("--redis-password", default=None,
                   help="the cluster secret (prefer $RAY_REDIS_PASSWORD: argv is public)")
    p.add_argument("--session-dir", required=True)
    p.add_argument("--raylet-socket", required=True)
    p.add_argument("--plasma-socket", required=True)
    p.add_argument("--resources", type=json.loads, default={})
    p.add_argument("--object-store-memory", type=int, required=True)
    p.add_argument("--plasma-directory", default=None)
    p.add_argument("--huge-pages", action="store_true")
    p.add_argument("--node-manager-port", type=int, default=0)
    p.add_argument("--object-manager-port", type=int, default=0)
    p.add_argument("--owner-pid", type=int, default=0)
    p.add_argument("--head", action="store_true")
    p.add_argument("--no-redirect-worker-output", action="store_true")
    p.add_argument("--config-json", default="{}")
    p.add_argument("--ready-fd", type=int, default=-1)
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    logging.basicConfig(
        level=os.environ.get("RAY_RAYLET_LOG_LEVEL", "INFO"),
        format="%(asctime)s %(levelname)s raylet: %(message)s",
        stream=sys.stderr,
    )
    try:
        import setproctitle

        setproctitle.setproctitle("ray::raylet")
    except ImportError:
        pass
    from ray._private import auth
    from ray._private.pdeathsig import die_with_parent
    from ray._private.raylet import worker_pool

    # Started from a thread other than its owner's main thread: PDEATHSIG would fire
    # when that thread exits; polling --owner-pid is enough.
    if args.owner_pid and not os.environ.pop("RAY_RAYLET_NO_PDEATHSIG", None):
        die_with_parent()
    secret = args.redis_password or os.environ.get(auth.SECRET_ENV)
    auth.set_cluster_secret(secret, export=True)
    from ray._private import tls

    try:
        tls.check()  # RAY_USE_TLS with a missing or unreadable file: say which, do not start
    except ValueError as exc:
        print(f"raylet: {exc}", file=sys.stderr, flush=True)
        sys.exit(2)
    # First, so the zygote's imports overlap the raylet's own start-up.
    args.zygote = worker_pool.spawn_zygote(os.path.join(args.session_dir, "logs"),
                                           worker_pool.worker_env(args.config_json))
    from ray._private.raylet.node_manager import NodeManager

    config = build_config(args.config_json)
    gcs = connect(args.gcs_address, secret or "", config.gcs_connect_timeout_s)
    node = NodeManager(args, config, gcs)
    try:
        import uvloop

        loop = uvloop.new_event_loop()
    except ImportError:
        loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, node.request_stop)

    async def run():
        node._stop_event = asyncio.Event()
        await node.start()
        from ray._private import node_stats  # utilisation samples (ray status, dashboard)

        loop.create_task(node_stats.report_loop(gcs, node.node_id, node.resources, node.store,
                                                lambda: node._stopping))
        if args.ready_fd >= 0:
            import os

            os.write(args.ready_fd, json.dumps({"raylet_port": node.tcp_port}).encode() + b"\n")
            os.close(args.ready_fd)
        await node._stop_event.wait()
        await node.stop()

    try:
        loop.run_until_complete(run())
    finally:
        gcs.close()
        loop.close()


if __name__ == "__main__":
    main()
