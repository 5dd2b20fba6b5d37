"""``JobSubmissionClient``: the job API over the dashboard's REST routes (Ray's routes).

``address``: ``http://host:8265`` (or ``host:8265``); ``None`` / ``"auto"`` use
``$RAY_ADDRESS`` when it is an http address, else the dashboard of the cluster on this
machine (found in its GCS). Local ``working_dir`` / ``py_modules`` paths in
``runtime_env`` are packed here and uploaded once (``PUT /api/packages/gcs/<name>``,
content-addressed), then referred to as ``gcs://`` URIs.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator

from ray._private.job_models import JobDetails, JobStatus
from ray.dashboard.client import DashboardClient, DashboardRequestError


def dashboard_address(address: str | None) -> str:
    """The dashboard URL a client talks to (see the module docstring)."""
    if address not in (None, "", "auto"):
        if address.startswith("ray://"):
            raise ValueError(
                f"{address!r} is a Ray Client address; the job API talks to the dashboard: "
                "pass http://<head>:8265")
        return address
    env = os.environ.get("RAY_ADDRESS", "")
    if env.startswith(("http://", "https://")):
        return env
    from ray import dashboard
    from ray._private import auth
    from ray._private.driver import _resolve_address
    from ray._private.gcs import connect

    gcs_address = _resolve_address(env or "auto")
    gcs = connect(gcs_address, auth.resolve_secret(gcs_address, None))
    try:
        info = dashboard.lookup(gcs)
    finally:
        gcs.close()
    if info is None:
        raise DashboardRequestError(
            f"The cluster at {gcs_address} runs no dashboard, which serves the job API: start "
            "it with `ray start --head` (the dashboard is on by default there) or "
            "ray.init(include_dashboard=True).")
    return info["url"]


class JobSubmissionClient:
    def __init__(self, address: str | None = None, create_cluster_if_needed: bool = False,
                 cookies: dict | None = None, metadata: dict | None = None,
                 headers: dict | None = None, verify=True):
        if create_cluster_if_needed:
            raise ValueError("create_cluster_if_needed=True is not supported: start the "
                             "cluster with `ray start --head` first.")
        self._client = DashboardClient(dashboard_address(address), headers=headers,
                                       cookies=cookies, verify=verify)
        self._default_metadata = dict(metadata or {})
        version = self._request("GET", "/api/version")
        self._server_ray_version = version.get("ray_version")

    @property
    def address(self) -> str:
        return self._client.address

    def get_address(self) -> str:
        return self._client.address

    def _request(self, method, path, *, ok_statuses=(200,), **kwargs):
        response = self._client.request(method, path, **kwargs)
        if response.status_code not in ok_statuses:
            raise RuntimeError(f"Request failed with status code {response.status_code}: "
                               f"{response.text.strip()}")
        return response.json() if "json" in response.content_type else response.text

    # -- packages -------------------------------------------------------------------------
    def _upload_packages(self, runtime_env: dict) -> dict:
        from ray._private import runtime_env as renv

        local = renv.validate(runtime_env)
        prepared = renv.prepare(local, max_bytes=500 * 1024**2)
        for uri, data in prepared.packages.items():
            protocol, name = uri.split("://", 1)
            path = f"/api/packages/{protocol}/{name}"
            if self._client.request("GET", path).status_code == 404:
                self._request("PUT", path, data=data, timeout=300)
        return prepared.resolved

    # -- the API --------------------------------------------------------------------------
    def submit_job(self, *, entrypoint: str, job_id: str | None = None,
                   runtime_env: dict | None = None, metadata: dict | None = None,
                   submission_id: str | None = None, entrypoint_num_cpus=None,
                   entrypoint_num_gpus=None, entrypoint_memory=None,
                   entrypoint_resources=None, entrypoint_label_selector=None) -> str:
        """Submit ``entrypoint`` (a shell command); returns the submission id."""
        if entrypoint_label_selector:
            raise ValueError("entrypoint_label_selector is not supported: nodes here have no "
                             "labels. Use entrypoint_resources with a custom resource.")
        metadata = dict(metadata or {})
        metadata.update(self._default_metadata)
        request = {
            "entrypoint": entrypoint, "submission_id": submission_id or job_id,
            "runtime_env": self._upload_packages(runtime_env) if runtime_env else None,
            "metadata": metadata or None, "entrypoint_num_cpus": entrypoint_num_cpus,
            "entrypoint_num_gpus": entrypoint_num_gpus, "entrypoint_memory": entrypoint_memory,
            "entrypoint_resources": entrypoint_resources,
        }
        body = {k: v for k, v in request.items() if v is not None}
        return self._request("POST", "/api/jobs/", json_data=body)["submission_id"]

    def stop_job(self, job_id: str) -> bool:
        return self._request("POST", f"/api/jobs/{job_id}/stop")["stopped"]

    def delete_job(self, job_id: str) -> bool:
        return self._request("DELETE", f"/api/jobs/{job_id}")["deleted"]

    def get_job_info(self, job_id: str) -> JobDetails:
        return JobDetails.from_dict(self._request("GET", f"/api/jobs/{job_id}"))

    def list_jobs(self) -> list[JobDetails]:
        return [JobDetails.from_dict(d) for d in self._request("GET", "/api/jobs/")]

    def get_job_status(self, job_id: str) -> JobStatus:
        return self.get_job_info(job_id).status

    def get_job_logs(self, job_id: str) -> str:
        return self._request("GET", f"/api/jobs/{job_id}/logs")["logs"]

    def iter_job_logs(self, job_id: str) -> Iterator[str]:
        """The job's output as it is written, until the job ends (blocking)."""
        return self._client.websocket_text_frames(f"/api/jobs/{job_id}/logs/tail")

    async def tail_job_logs(self, job_id: str) -> AsyncIterator[str]:
        """``async for lines in client.tail_job_logs(id)``: follow the output to the end."""
        frames = self.iter_job_logs(job_id)
        done = object()
        while True:
            chunk = await asyncio.to_thread(next, frames, done)
            if chunk is done:
                return
            yield chunk

    def get_version(self) -> str:
        return self._request("GET", "/api/version")["version"]


__all__ = ["JobSubmissionClient", "dashboard_address"]
