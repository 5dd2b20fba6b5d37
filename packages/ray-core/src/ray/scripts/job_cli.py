"""``ray job submit|status|logs|list|stop|delete`` over ``JobSubmissionClient``.

``--address`` (or ``$RAY_ADDRESS``): the dashboard, ``http://<head>:8265``; without it,
the dashboard of the cluster on this machine.
"""

from __future__ import annotations

import json
import time

import click

from ray._private.job_models import JobStatus

address_option = click.option(
    "--address", default=None,
    help="The dashboard: http://<head>:8265 (default: $RAY_ADDRESS, else this machine's "
         "cluster).")


def _client(address):
    from ray.dashboard.client import DashboardRequestError
    from ray.job_submission import JobSubmissionClient

    try:
        return JobSubmissionClient(address)
    except (DashboardRequestError, ConnectionError, ValueError, RuntimeError) as exc:
        raise click.ClickException(str(exc)) from None


def _call(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except (RuntimeError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None


def _runtime_env(runtime_env_file, runtime_env_json, working_dir) -> dict:
    if runtime_env_file and runtime_env_json:
        raise click.UsageError("Give --runtime-env or --runtime-env-json, not both.")
    env: dict = {}
    if runtime_env_file:
        try:
            import yaml
        except ImportError:
            raise click.UsageError("--runtime-env reads YAML and needs PyYAML (pip install "
                                   "pyyaml); or pass --runtime-env-json") from None
        with open(runtime_env_file) as f:
            env = yaml.safe_load(f) or {}
    elif runtime_env_json:
        try:
            env = json.loads(runtime_env_json)
        except json.JSONDecodeError as exc:
            raise click.BadParameter(f"--runtime-env-json is not JSON: {exc}") from None
    if not isinstance(env, dict):
        raise click.BadParameter("the runtime_env must be a JSON/YAML object")
    if working_dir:
        env["working_dir"] = working_dir
    return env


def _follow(client, submission_id) -> None:
    try:
        for chunk in client.iter_job_logs(submission_id):
            click.echo(chunk, nl=False)
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # noqa: BLE001 - fall back to polling the status
        click.echo(f"(log stream interrupted: {exc}; polling the status instead)", err=True)


def _wait_terminal(client, submission_id, timeout_s=None) -> JobStatus:
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        status = _call(client.get_job_status, submission_id)
        if status.is_terminal() or (deadline and time.monotonic() > deadline):
            return status
        time.sleep(0.2)


def _banner(text: str) -> str:
    rule = "-" * max(42, len(text))
    return f"{rule}\n{text}\n{rule}"


@click.group("job")
def job_group():
    """Submit, follow and stop jobs on a cluster (through its dashboard)."""


@job_group.command("submit", context_settings={"ignore_unknown_options": True})
@address_option
@click.option("--submission-id", "--job-id", "submission_id", default=None,
              help="An id for the job (default: raysubmit_<random>).")
@click.option("--runtime-env", "runtime_env_file", default=None,
              help="A YAML file with the job's runtime_env.")
@click.option("--runtime-env-json", default=None, help="The job's runtime_env as JSON.")
@click.option("--working-dir", default=None,
              help="A local directory (uploaded) or gcs:// URI the entrypoint runs in.")
@click.option("--metadata-json", default=None, help="Metadata (JSON object of strings).")
@click.option("--entrypoint-num-cpus", type=float, default=None)
@click.option("--entrypoint-num-gpus", type=float, default=None)
@click.option("--entrypoint-memory", type=int, default=None)
@click.option("--entrypoint-resources", default=None, help="Custom resources as JSON.")
@click.option("--no-wait", is_flag=True, help="Return once submitted (do not follow logs).")
@click.argument("entrypoint", nargs=-1, required=True, type=click.UNPROCESSED)
def job_submit(address, submission_id, runtime_env_file, runtime_env_json, working_dir,
               metadata_json, entrypoint_num_cpus, entrypoint_num_gpus, entrypoint_memory,
               entrypoint_resources, no_wait, entrypoint):
    """Submit ENTRYPOINT (after --), e.g. ray job submit --working-dir . -- python run.py"""
    client = _client(address)
    env = _runtime_env(runtime_env_file, runtime_env_json, working_dir)
    metadata = json.loads(metadata_json) if metadata_json else None
    resources = json.loads(entrypoint_resources) if entrypoint_resources else None
    command = " ".join(entrypoint)
    sid = _call(client.submit_job, entrypoint=command, submission_id=submission_id,
                runtime_env=env or None, metadata=metadata,
                entrypoint_num_cpus=entrypoint_num_cpus, entrypoint_num_gpus=entrypoint_num_gpus,
                entrypoint_memory=entrypoint_memory, entrypoint_resources=resources)
    click.echo(f"Job submission server address: {client.address}\n")
    click.echo(_banner(f"Job '{sid}' submitted successfully"))
    click.echo(f"\nNext steps\n  Query the logs of the job:\n    ray job logs {sid}\n"
               f"  Query the status of the job:\n    ray job status {sid}\n"
               f"  Request the job to be stopped:\n    ray job stop {sid}\n")
    if no_wait:
        return
    click.echo("Tailing logs until the job exits (disable with --no-wait):")
    _follow(client, sid)
    status = _wait_terminal(client, sid)
    verb = {JobStatus.SUCCEEDED: "succeeded", JobStatus.FAILED: "failed",
            JobStatus.STOPPED: "was stopped"}[status]
    click.echo(_banner(f"Job '{sid}' {verb}"))
    if status is not JobStatus.SUCCEEDED:
        raise SystemExit(1)


@job_group.command("status")
@address_option
@click.argument("job_id")
def job_status(address, job_id):
    """The status of a job (submission id or job id)."""
    info = _call(_client(address).get_job_info, job_id)
    click.echo(f"Status for job '{job_id}': {info.status}")
    if info.message:
        click.echo(f"Status message: {info.message}")


@job_group.command("logs")
@address_option
@click.option("-f", "--follow", is_flag=True, help="Keep printing output until the job ends.")
@click.argument("job_id")
def job_logs(address, follow, job_id):
    """A job's output (the entrypoint's stdout and stderr)."""
    client = _client(address)
    if follow:
        _follow(client, job_id)
    else:
        click.echo(_call(client.get_job_logs, job_id), nl=False)


@job_group.command("list")
@address_option
def job_list(address):
    """Every job of the cluster: submitted ones and plain drivers."""
    jobs = _call(_client(address).list_jobs)
    click.echo(json.dumps([j.dict() for j in jobs], indent=2, default=str))


@job_group.command("stop")
@address_option
@click.option("--no-wait", is_flag=True, help="Return without waiting for it to exit.")
@click.argument("job_id")
def job_stop(address, no_wait, job_id):
    """Stop a running job (SIGTERM to its entrypoint, SIGKILL after 3 s)."""
    client = _client(address)
    click.echo(f"Attempting to stop job '{job_id}'")
    stopped = _call(client.stop_job, job_id)
    if not stopped:
        click.echo(f"Job '{job_id}' had already ended: {client.get_job_status(job_id)}")
        return
    if no_wait:
        return
    click.echo(f"Waiting for job '{job_id}' to exit (disable with --no-wait):")
    status = _wait_terminal(client, job_id, timeout_s=60)
    click.echo(f"Job '{job_id}' was stopped" if status is JobStatus.STOPPED
               else f"Job '{job_id}' is {status}")


@job_group.command("delete")
@address_option
@click.argument("job_id")
def job_delete(address, job_id):
    """Forget an ended job (its record and output)."""
    _call(_client(address).delete_job, job_id)
    click.echo(f"Job '{job_id}' deleted successfully")


COMMANDS = {"job": job_group}

__all__ = ["COMMANDS"]
