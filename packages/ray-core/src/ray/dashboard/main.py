"""The dashboard process: ``python -m ray.dashboard.main --gcs-address HOST:PORT ...``.

Binds ``--host`` (default 127.0.0.1) on ``--port`` or the next free port above
it (HTTPS with mutual TLS when ``RAY_USE_TLS`` is on: ``https``), records its URL
in the GCS (``ray:dashboard``) so every driver's ``ray.get_webui_url()`` finds it,
writes one JSON line to ``--ready-fd`` and serves until SIGTERM. The GCS password comes from ``$RAY_REDIS_PASSWORD``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import socket
import sys

from ray._private.gcs import connect, keys

PORT_ATTEMPTS = 50
logger = logging.getLogger("ray.dashboard")


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``port`` or the first free port after it."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    last = None
    for candidate in range(port, min(port + PORT_ATTEMPTS, 65536)):
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, candidate))
            sock.listen(128)
            return sock
        except OSError as exc:  # in use: try the next one
            sock.close()
            last = exc
    raise OSError(f"no free port in {port}..{port + PORT_ATTEMPTS - 1} on {host}: {last}")


def bind(app, host: str, port: int):
    """A threaded WSGI server on ``port`` or the first free port after it; HTTPS with
    mutual TLS when ``RAY_USE_TLS`` is on (``https``).

    werkzeug exits the process when its own bind fails, so the socket is bound
    here and handed over.
    """
    from werkzeug.serving import make_server

    from ray._private import tls

    tls.check()  # a missing or unreadable file: fail at start, naming the variable
    sock = listen(host, port)
    if tls.config() is not None:
        from ray.dashboard.https import TlsWSGIServer

        server = TlsWSGIServer(host, sock.getsockname()[1], app, fd=sock.fileno(),
                               context=tls.server_context())
    else:
        server = make_server(host, sock.getsockname()[1], app, threaded=True,
                             fd=sock.fileno())
    server._listening_socket = sock  # keep the original open as long as the server
    return server


def url_host(host: str, node_ip: str) -> str:
    return node_ip if host in ("0.0.0.0", "", "::") else host


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gcs-address", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8265)
    parser.add_argument("--node-ip", default="127.0.0.1")
    parser.add_argument("--session-dir", default=None)
    parser.add_argument("--ready-fd", type=int, default=None)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from ray._private.job_manager import JobManager
    from ray._private.log_reader import ClusterLogs
    from ray.dashboard.app import create_app
    from ray.dashboard.data import ClusterView
    from ray.util.state._source import GcsStateSource

    secret = os.environ.get("RAY_REDIS_PASSWORD")
    gcs = connect(args.gcs_address, secret)
    view = ClusterView(gcs, args.session_dir)
    app = create_app(view, ClusterLogs(gcs, secret), jobs=JobManager(gcs, args.gcs_address),
                     state_source=GcsStateSource(gcs),
                     session_name=os.path.basename(args.session_dir or ""))
    server = bind(app, args.host, args.port)
    port = server.socket.getsockname()[1]
    scheme = "https" if server.ssl_context is not None else "http"
    info = {"url": f"{scheme}://{url_host(args.host, args.node_ip)}:{port}", "host": args.host,
            "port": port, "pid": os.getpid(), "node_ip": args.node_ip}
    gcs.hset_obj(keys.DASHBOARD, "info", info)
    view.follow_logs()
    logger.info("dashboard at %s (GCS %s)", info["url"], args.gcs_address)
    if args.ready_fd is not None:
        os.write(args.ready_fd, (json.dumps(info) + "\n").encode())
        os.close(args.ready_fd)

    def stop(*_):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        try:
            current = gcs.hget_obj(keys.DASHBOARD, "info")
            if current and current.get("pid") == os.getpid():
                gcs.hdel(keys.DASHBOARD, "info")
        except Exception as exc:  # noqa: BLE001 - shutting down: log it, still close
            # The GCS usually went first (`ray stop` ends the head's processes together,
            # and the entry goes with it); else a stale entry stays until the next
            # dashboard of this cluster writes its own at start.
            logger.info("could not remove the dashboard's GCS entry on exit: %s", exc)
        try:
            server.server_close()
        except OSError as exc:
            logger.info("closing the dashboard's listening socket failed: %s", exc)
        gcs.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
