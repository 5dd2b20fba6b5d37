"""The dashboard's Flask app: one HTML page and a JSON API under ``/api/``.

Routes (all GET, all JSON except the page and ``/api/logs/file``):

    /                      the page (static/index.html; plain JS, no downloads)
    /api/summary           live node/actor counts, cluster and available resources, host load
    /api/nodes             nodes with total/available/used resources and heartbeat age
    /api/actors            actors and their state (PENDING/ALIVE/RESTARTING/DEAD)
    /api/workers           every driver and worker: pid, node, job, actor, running task
    /api/tasks             running tasks (live) and recently finished ones
    /api/errors            errors of every job (task failures)
    /api/jobs              drivers (jobs)
    /api/logs              recent worker output lines, per worker (streamed over pub/sub)
    /api/logs/files        log files of the processes on the dashboard's node
    /api/logs/file?name=   the tail of one of them (text)
    /api/timeline?limit=   the newest profile events (default 5000) as Chrome-trace events
    /api/memory            live object references cluster-wide (as `ray memory`)
"""

from __future__ import annotations

import logging
import os

from flask import Flask, Response, jsonify, request, send_from_directory

from ray.dashboard.data import TIMELINE_MAX_EVENTS, ClusterView

logger = logging.getLogger(__name__)
STATIC_DIR = os.path.join(os.path.dirname(__file__), "static")


def create_app(view: ClusterView) -> Flask:
    app = Flask(__name__, static_folder=STATIC_DIR, static_url_path="/static")

    @app.get("/")
    def index():
        return send_from_directory(STATIC_DIR, "index.html")

    @app.get("/favicon.ico")
    def favicon():
        return Response(status=204)

    api = {
        "summary": view.summary,
        "nodes": view.nodes,
        "actors": view.actors,
        "workers": view.workers,
        "tasks": view.tasks,
        "errors": view.errors,
        "jobs": view.jobs,
        "logs": view.logs,
        "logs/files": view.log_files,
        "memory": view.memory,
    }
    for name, fn in api.items():
        app.add_url_rule(f"/api/{name}", f"api_{name}", _json_route(fn))

    @app.get("/api/timeline")
    def timeline():
        try:
            limit = int(request.args.get("limit", TIMELINE_MAX_EVENTS))
        except ValueError:
            return jsonify({"error": "limit must be an integer number of events"}), 400
        return _json_route(lambda: view.timeline(max(1, min(limit, 100_000))))()

    @app.get("/api/logs/file")
    def log_file():
        name = request.args.get("name", "")
        try:
            text = view.log_file(name)
        except ValueError as exc:
            return jsonify({"error": str(exc)}), 400
        except FileNotFoundError:
            return jsonify({"error": f"no log file named {name!r} on this node"}), 404
        return Response(text, mimetype="text/plain")

    @app.get("/api/")
    def api_index():
        return jsonify(sorted(f"/api/{name}" for name in api)
                       + ["/api/logs/file?name=", "/api/timeline?limit="])

    return app


def _json_route(fn):
    def route():
        try:
            return jsonify(fn())
        except Exception as exc:  # noqa: BLE001 - the page shows the reason and keeps polling
            logger.exception("dashboard API call failed")
            return jsonify({"error": f"{type(exc).__name__}: {exc}"}), 500

    return route


__all__ = ["create_app"]
