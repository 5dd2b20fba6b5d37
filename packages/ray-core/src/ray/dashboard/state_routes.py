"""The state API's routes (Ray's ``/api/v0/`` paths, parameters and envelope).

    GET /api/v0/<resource>?limit=&timeout=&detail=&filter_keys=&filter_predicates=&filter_values=
    GET /api/v0/<tasks|actors|objects>/summarize?timeout=
    GET /api/v0/logs?node_id=|node_ip=&glob=          log files of a node, by group
    GET /api/v0/logs/file?<query>                     a log's content (text)

Answers are ``{"result": true, "msg": "", "data": {"result": ...}}``; errors are
``{"result": false, "msg": ...}`` with 400 (bad request) or 500.
"""

from __future__ import annotations

import logging

from flask import Blueprint, Response, jsonify, request

from ray._private import log_reader
from ray._private.log_reader import ClusterLogs
from ray.util.state._source import GcsStateSource
from ray.util.state.common import (
    DEFAULT_LIMIT,
    DEFAULT_RPC_TIMEOUT,
    ListOptions,
    SummaryResource,
    resource_from_name,
)

logger = logging.getLogger(__name__)


def _ok(result):
    return jsonify({"result": True, "msg": "", "data": {"result": result}})


def _error(message: str, status: int):
    return jsonify({"result": False, "msg": message, "data": {}}), status


def _options() -> ListOptions:
    args = request.args
    keys_, predicates, values = (args.getlist("filter_keys"), args.getlist("filter_predicates"),
                                 args.getlist("filter_values"))
    if not len(keys_) == len(predicates) == len(values):
        raise ValueError("filter_keys, filter_predicates and filter_values must have the same "
                         "number of entries")
    try:
        limit = int(args.get("limit", DEFAULT_LIMIT))
        timeout = float(args.get("timeout", DEFAULT_RPC_TIMEOUT))
    except ValueError:
        raise ValueError("limit must be an integer and timeout a number of seconds") from None
    return ListOptions(limit=limit, timeout=timeout,
                       detail=args.get("detail", "false").lower() in ("1", "true"),
                       filters=tuple(zip(keys_, predicates, values)))


def state_blueprint(source: GcsStateSource, logs: ClusterLogs) -> Blueprint:
    """The routes; ``logs`` reads log files from the raylet of the node they are on."""
    bp = Blueprint("state", __name__)

    @bp.get("/api/v0/logs")
    def list_logs():
        try:
            groups = logs.list_logs(node_id=request.args.get("node_id"),
                                    node_ip=request.args.get("node_ip"),
                                    glob_filter=request.args.get("glob") or "*")
        except log_reader.LogNotFound as exc:
            return _error(str(exc), 404)
        return _ok(groups)

    @bp.get("/api/v0/logs/file")
    def log_file():
        args = request.args
        try:
            pid = int(args["pid"]) if args.get("pid") else None
            query = log_reader.LogQuery(
                node_id=args.get("node_id"), node_ip=args.get("node_ip"),
                filename=args.get("filename"), actor_id=args.get("actor_id"),
                task_id=args.get("task_id"), pid=pid, suffix=args.get("suffix", "out"),
                submission_id=args.get("submission_id"),
                tail_lines=int(args.get("lines", -1)),
                filter_ansi_code=args.get("filter_ansi_code", "false").lower() == "true")
            data = b"".join(logs.stream(query))
        except ValueError as exc:
            return _error(str(exc), 400)
        except log_reader.LogNotFound as exc:
            return _error(str(exc), 404)
        return Response(data, mimetype="text/plain")

    @bp.get("/api/v0/<name>/summarize")
    def summarize(name):
        try:
            resource = SummaryResource(name)
        except ValueError:
            return _error(f"{name} cannot be summarized; tasks, actors and objects can", 400)
        try:
            summary = source.summarize(resource, _options().timeout)
        except ValueError as exc:
            return _error(str(exc), 400)
        except Exception as exc:  # noqa: BLE001 - the client shows the reason
            logger.exception("summarize %s failed", name)
            return _error(f"{type(exc).__name__}: {exc}", 500)
        return _ok({"total": summary.total, "num_after_truncation": summary.num_after_truncation,
                    "num_filtered": summary.num_after_truncation,
                    "partial_failure_warning": summary.partial_failure_warning,
                    "warnings": summary.warnings,
                    "num_status_task_events_dropped": summary.num_status_task_events_dropped,
                    "result": {"node_id_to_summary": summary.summary}})

    @bp.get("/api/v0/<name>")
    def list_resource(name):
        try:
            resource = resource_from_name(name)
            options = _options()
            result = source.list(resource, options)
        except ValueError as exc:
            return _error(str(exc), 400)
        except Exception as exc:  # noqa: BLE001 - the client shows the reason
            logger.exception("list %s failed", name)
            return _error(f"{type(exc).__name__}: {exc}", 500)
        return _ok(result.to_json())

    return bp


__all__ = ["state_blueprint"]
