"""The job API's REST routes (Ray's paths and bodies), served by the dashboard.

    GET    /api/version                              {"version", "ray_version", ...}
                                                     (ray_version: RAY_JOB_API_RELEASE)
    GET    /api/packages/<protocol>/<name>           200 if the package is uploaded, else 404
    PUT    /api/packages/<protocol>/<name>           upload a runtime_env package (the body)
    POST   /api/jobs/                                submit: JobSubmitRequest -> {"submission_id"}
    GET    /api/jobs/                                every job (JobDetails)
    GET    /api/jobs/<id>                            one job, by submission id or job id
    POST   /api/jobs/<id>/stop                       {"stopped": bool}
    DELETE /api/jobs/<id>                            {"deleted": bool} (ended jobs only)
    GET    /api/jobs/<id>/logs                       {"logs": str}
    GET    /api/jobs/<id>/logs/tail                  websocket: text frames until the job ends
"""

from __future__ import annotations

import time
import traceback

from flask import Blueprint, Response, jsonify, request

import ray
from ray._private import job_manager, log_reader
from ray._private.job_models import JobType
from ray._private.runtime_env import upload_package
from ray.dashboard import websocket

API_VERSION = "4"  # Ray's CURRENT_VERSION of the job REST API (dashboard/modules/version.py)
# What ``/api/version`` reports as ``ray_version``: the Ray release whose job API this server
# speaks (routes, JobSubmitRequest fields, JobDetails, the websocket tail), not this
# package's version. Ray's JobSubmissionClient compares that field with the release that
# introduced each feature it uses (jobs 1.9, 2.x clients need 2.0, entrypoint_num_cpus 2.2,
# entrypoint_memory 2.8) and refuses a server below; ``ray.__version__`` ("0.7.0", the Ray
# 0.7 API this project also speaks) would be refused by every Ray 2.x client. The package's
# own version is reported beside it as ``implementation_version``.
RAY_JOB_API_RELEASE = "2.60.0"
_REQUEST_FIELDS = {"entrypoint", "submission_id", "job_id", "runtime_env", "metadata",
                   "entrypoint_num_cpus", "entrypoint_num_gpus", "entrypoint_memory",
                   "entrypoint_resources", "entrypoint_label_selector"}
MAX_PACKAGE_BYTES = 500 * 1024**2


def _text(message: str, status: int) -> Response:
    return Response(message, status=status, mimetype="text/plain")


def job_blueprint(manager: job_manager.JobManager, session_name: str) -> Blueprint:
    bp = Blueprint("jobs", __name__)
    gcs = manager.store.gcs

    def find(job_or_submission_id: str):
        for details in job_manager.job_details(gcs):
            if job_or_submission_id in (details.submission_id, details.job_id):
                return details
        return None

    @bp.get("/api/version")
    def version():
        return jsonify({"version": API_VERSION, "ray_version": RAY_JOB_API_RELEASE,
                        "ray_commit": "", "session_name": session_name,
                        "implementation_version": ray.__version__})

    @bp.get("/api/packages/<protocol>/<name>")
    def package_exists(protocol, name):
        uri = f"{protocol}://{name}"
        from ray._private.gcs import keys

        if gcs.get(keys.kv("runtime_env_uploaded", uri)) is None:
            return _text(f"Package {uri} does not exist", 404)
        return _text("", 200)

    @bp.put("/api/packages/<protocol>/<name>")
    def package_upload(protocol, name):
        if protocol != "gcs":
            return _text(f"Only gcs:// packages can be uploaded, got {protocol}://", 400)
        if (request.content_length or 0) > MAX_PACKAGE_BYTES:
            return _text(f"Package is larger than {MAX_PACKAGE_BYTES} bytes", 413)
        upload_package(gcs, f"{protocol}://{name}", request.get_data())
        return _text("", 200)

    @bp.post("/api/jobs/")
    def submit():
        body = request.get_json(silent=True)
        if not isinstance(body, dict):
            return _text("The request body must be a JSON object (JobSubmitRequest).", 400)
        unknown = sorted(set(body) - _REQUEST_FIELDS)
        if unknown:
            return _text(f"Unknown JobSubmitRequest fields: {', '.join(unknown)}", 400)
        if body.get("entrypoint_label_selector"):
            return _text("entrypoint_label_selector is not supported: nodes here have no "
                         "labels. Use entrypoint_resources.", 400)
        submission_id = body.get("submission_id") or body.get("job_id")
        try:
            sid = manager.submit(
                entrypoint=body.get("entrypoint"), submission_id=submission_id,
                runtime_env=body.get("runtime_env"), metadata=body.get("metadata"),
                entrypoint_num_cpus=body.get("entrypoint_num_cpus"),
                entrypoint_num_gpus=body.get("entrypoint_num_gpus"),
                entrypoint_memory=body.get("entrypoint_memory"),
                entrypoint_resources=body.get("entrypoint_resources"))
        except (TypeError, ValueError) as exc:
            return _text(str(exc), 400)
        except Exception:  # noqa: BLE001 - the client shows the traceback
            return _text(traceback.format_exc(), 500)
        return jsonify({"job_id": sid, "submission_id": sid})

    @bp.get("/api/jobs/")
    def list_jobs():
        return jsonify([d.dict() for d in job_manager.job_details(gcs)])

    @bp.get("/api/jobs/<job_id>")
    def get_job(job_id):
        details = find(job_id)
        if details is None:
            return _text(f"Job {job_id} does not exist", 404)
        return jsonify(details.dict())

    def submission(job_id, verb):
        details = find(job_id)
        if details is None:
            return None, _text(f"Job {job_id} does not exist", 404)
        if details.type is not JobType.SUBMISSION:
            return None, _text(f"Can only {verb} submission type jobs", 400)
        return details.submission_id, None

    @bp.post("/api/jobs/<job_id>/stop")
    def stop(job_id):
        sid, error = submission(job_id, "stop")
        if error is not None:
            return error
        try:
            return jsonify({"stopped": manager.stop(sid)})
        except Exception:  # noqa: BLE001 - the client shows the traceback
            return _text(traceback.format_exc(), 500)

    @bp.delete("/api/jobs/<job_id>")
    def delete(job_id):
        sid, error = submission(job_id, "delete")
        if error is not None:
            return error
        try:
            return jsonify({"deleted": manager.delete(sid)})
        except ValueError as exc:
            return _text(str(exc), 400)

    @bp.get("/api/jobs/<job_id>/logs")
    def logs(job_id):
        sid, error = submission(job_id, "get logs of")
        if error is not None:
            return error
        return jsonify({"logs": manager.logs(sid)})

    # websocket=True: werkzeug's router matches websocket requests only to such rules.
    @bp.route("/api/jobs/<job_id>/logs/tail", websocket=True)
    def tail(job_id):
        sid, error = submission(job_id, "get logs of")
        if error is not None:
            return error
        if not websocket.is_upgrade():
            return _text("This route is a websocket: connect with Upgrade: websocket", 400)
        query = log_reader.LogQuery(submission_id=sid, follow=True, interval_s=0.2)
        started = time.monotonic()
        frames = (chunk.decode("utf-8", "replace")
                  for chunk in log_reader.stream_job_log(
                      gcs, query, should_stop=lambda: time.monotonic() - started > 24 * 3600))
        return websocket.serve_text(frames)

    return bp


__all__ = ["API_VERSION", "RAY_JOB_API_RELEASE", "job_blueprint"]
