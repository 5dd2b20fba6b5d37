"""The dashboard's Flask app: one HTML page and a JSON API under ``/api/``.

Routes (all GET, all JSON except the page and ``/api/logs/file``):

    /                      the page (static/index.html; plain JS, no downloads)
    /api/summary           live node/actor counts, cluster and available resources, host load
    /api/nodes             nodes with total/available/used resources and heartbeat age
    /api/actors            actors and their state (PENDING/ALIVE/RESTARTING/DEAD)
    /api/workers           every driver and worker: pid, node, job, actor, running task
    /api/tasks[?finished=0]  running tasks (live) and recently finished ones
    /api/errors            errors of every job (task failures)
    /api/jobs              drivers (jobs)
    /api/logs              recent worker output lines, per worker (streamed over pub/sub)
    /api/logs/files        log files of the head node's processes (from its raylet)
    /api/logs/file?name=   the last LOG_FILE_TAIL_LINES lines of one of them (text)
    /api/timeline?limit=   the newest profile events (default 5000) as Chrome-trace events
    /api/memory            live object references cluster-wide (as `ray memory`)
    /api/tasks/page?state=&q=&limit=   task counts by state and the newest matching tasks
                           (q: a task id or prefix, an object id, or part of a name)
    /api/metrics?window_s= per-node utilisation series, completion-time histogram, heat map

The job API (``job_routes``) and the state API (``state_routes``, ``/api/v0/``) are
registered beside these when the app is given a job manager and a state source; log files
(``/api/logs/file*``, ``/api/v0/logs*``) are read through ``logs`` (a ``ClusterLogs``:
each node's raylet serves its own files).
"""

from __future__ import annotations

import logging
import os

from flask import Flask, Response, jsonify, request, send_from_directory

from ray._private.log_reader import ClusterLogs, LogNotFound, LogQuery
from ray._private.task_events import STATES as task_states
from ray.dashboard.data import TIMELINE_MAX_EVENTS, ClusterView

logger = logging.getLogger(__name__)
STATIC_DIR = os.path.join(os.path.dirname(__file__), "static")
LOG_FILE_TAIL_LINES = 1000


def create_app(view: ClusterView, logs: ClusterLogs, *, jobs=None, state_source=None,
               session_name: str = "") -> Flask:
    """The app; ``jobs`` (a JobManager) adds the job API, ``state_source`` (a
    GcsStateSource) the state API (``job_routes``, ``state_routes``)."""
    app = Flask(__name__, static_folder=STATIC_DIR, static_url_path="/static")
    if jobs is not None:
        from ray.dashboard.job_routes import job_blueprint

        app.register_blueprint(job_blueprint(jobs, session_name))
    if state_source is not None:
        from ray.dashboard.state_routes import state_blueprint

        app.register_blueprint(state_blueprint(state_source, logs))

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
        "tasks": lambda: view.tasks(include_finished=request.args.get("finished") != "0"),
        "errors": view.errors,
        "jobs": view.jobs,
        "logs": view.logs,
        "logs/files": lambda: [{"name": f.name, "size_bytes": f.size_bytes}
                               for f in logs.list_files()],
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

    @app.get("/api/tasks/page")
    def task_page():
        try:
            limit = max(1, min(int(request.args.get("limit", 200)), 5000))
        except ValueError:
            return jsonify({"error": "limit must be an integer number of rows"}), 400
        state = request.args.get("state", "")
        if state and state not in task_states:
            return jsonify({"error": f"state must be one of {', '.join(task_states)}"}), 400
        return _json_route(lambda: view.task_page(state, request.args.get("q", ""), limit))()

    @app.get("/api/metrics")
    def metrics():
        try:
            window_s = max(10.0, min(float(request.args.get("window_s", 600)), 3600.0))
        except ValueError:
            return jsonify({"error": "window_s must be a number of seconds"}), 400
        return _json_route(lambda: view.metrics(window_s))()

    @app.get("/api/logs/file")
    def log_file():
        name = request.args.get("name", "")
        try:
            query = LogQuery(filename=name, tail_lines=LOG_FILE_TAIL_LINES)
            text = b"".join(logs.stream(query)).decode("utf-8", "replace")
        except ValueError as exc:
            return jsonify({"error": str(exc)}), 400
        except LogNotFound as exc:
            return jsonify({"error": str(exc)}), 404
        return Response(text, mimetype="text/plain")

    @app.get("/api/")
    def api_index():
        return jsonify(sorted(f"/api/{name}" for name in api)
                       + ["/api/logs/file?name=", "/api/timeline?limit=",
                          "/api/tasks/page?state=&q=&limit=", "/api/metrics?window_s="])

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
