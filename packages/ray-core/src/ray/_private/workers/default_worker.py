"""Entry point of worker processes started by the raylet."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys


def parse_args(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--worker-id", required=True)
    p.add_argument("--node-id", required=True)
    p.add_argument("--node-ip", required=True)
    p.add_argument("--gcs-address", required=True)
    p.add_argument("--redis-password", default=None)
    p.add_argument("--session-dir", required=True)
    p.add_argument("--raylet-socket", required=True)
    p.add_argument("--plasma-socket", required=True)
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    try:
        import setproctitle

        setproctitle.setproctitle("ray::IDLE")
    except ImportError:
        pass
    from ray._private import ids
    from ray._private import runtime as rt
    from ray._private.config import build_config
    from ray._private.gcs import connect
    from ray._private.rpc import RemoteError
    from ray._private.runtime.core_worker import MODE_WORKER, CoreWorker

    config = build_config()
    from ray._private.workers import malloc_tuning

    malloc_tuning.keep_freed_memory(config.worker_malloc_mmap_threshold_bytes,
                                    config.worker_malloc_trim_threshold_bytes)
    from ray._private import auth

    secret = args.redis_password or os.environ.get(auth.SECRET_ENV)
    auth.set_cluster_secret(secret, export=True)
    gcs = connect(args.gcs_address, secret or "", config.gcs_connect_timeout_s)
    node = {
        "node_id": args.node_id,
        "node_ip": args.node_ip,
        "raylet_socket": args.raylet_socket,
        "plasma_socket": args.plasma_socket,
        "session_dir": args.session_dir,
    }
    core = CoreWorker(
        mode=MODE_WORKER, node=node, job_id=ids.JobID.nil(), config=config, gcs=gcs,
        worker_id=bytes.fromhex(args.worker_id),
    )
    from ray._private import runtime_env

    core.runtime_env = runtime_env.adopt_in_worker()  # before any user code runs
    rt.set_current(core)
    try:
        core.bind_raylet("register_worker", core.worker_id, os.getpid(),
                         core.address.to_wire())
    except RemoteError as exc:
        sys.exit(f"the raylet refused this worker's registration: {exc}")
    signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
    if config.gc_freeze_startup_heap:
        from ray._private import gc_tuning

        gc_tuning.freeze_startup_heap(collect_first=False)
    try:
        core.executor.run_forever()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


if __name__ == "__main__":
    main()
