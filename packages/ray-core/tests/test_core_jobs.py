"""Jobs: a cluster from `ray start --head` (dashboard on by default), JobSubmissionClient and
`ray job ...` from other processes, the entrypoint in its runtime_env, status and output
kept in the GCS, stop, delete; Ray's REST routes (incl. the websocket log tail)."""

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

import ray
from ray._private import job_env
from ray.dashboard.client import DashboardClient
from ray.dashboard.job_routes import RAY_JOB_API_RELEASE
from ray.job_submission import JobStatus, JobSubmissionClient, JobType

RAY = [sys.executable, "-m", "ray.scripts.cli"]
PEER_PYTHON = "/work/peer/ray260/bin/python"  # Ray 2.60 in a venv of its own (optional)


@pytest.fixture(scope="module")
def head(ray_start_head):
    return ray_start_head(dashboard=True)


@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "helper.py").write_text("def double(x):\n    return 2 * x\n")
    (tmp_path / "script.py").write_text(textwrap.dedent("""
        import os, ray
        ray.init()
        import helper

        @ray.remote
        def f(x):
            import helper  # the working_dir is on the workers' path too
            return helper.double(x) + int(os.environ["OFFSET"])

        print("total", sum(ray.get([f.remote(i) for i in range(10)])), flush=True)
        print("files", sorted(os.listdir(".")), flush=True)
    """))
    return tmp_path


def _wait(client, sid, timeout_s=90):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        status = client.get_job_status(sid)
        if status.is_terminal():
            return status
        time.sleep(0.2)
    raise AssertionError(f"job {sid} still {status} after {timeout_s} s")


def test_submit_runs_the_entrypoint_in_its_runtime_env_and_keeps_status_and_logs(head, workdir):
    client = JobSubmissionClient(head["url"])
    sid = client.submit_job(entrypoint="python script.py",
                            runtime_env={"working_dir": str(workdir),
                                         "env_vars": {"OFFSET": "1"}},
                            metadata={"owner": "test"})
    assert sid.startswith("raysubmit_")
    assert _wait(client, sid) is JobStatus.SUCCEEDED
    logs = client.get_job_logs(sid)
    assert "total 100" in logs  # 2 * (0 + ... + 9) + 10
    assert "'helper.py', 'script.py'" in logs
    info = client.get_job_info(sid)
    assert info.type is JobType.SUBMISSION and info.driver_exit_code == 0
    assert info.metadata == {"owner": "test"} and info.runtime_env["working_dir"].startswith("gcs://")
    assert info.job_id and info.driver_info.id == info.job_id  # the driver it started
    assert client.get_job_info(info.job_id).submission_id == sid  # found by job id too
    listed = {j.submission_id: j for j in client.list_jobs()}
    assert listed[sid].status is JobStatus.SUCCEEDED
    assert info.job_id not in {j.job_id for j in client.list_jobs() if j.type is JobType.DRIVER}


def test_failure_stop_delete_and_duplicate_ids(head):
    client = JobSubmissionClient(head["url"])
    bad = client.submit_job(entrypoint="echo about to fail; exit 3")
    assert _wait(client, bad) is JobStatus.FAILED
    info = client.get_job_info(bad)
    assert info.error_type == "JOB_ENTRYPOINT_COMMAND_ERROR" and info.driver_exit_code == 3
    assert "exit code 3" in info.message and "about to fail" in info.message
    with pytest.raises(RuntimeError, match="already exists"):
        client.submit_job(entrypoint="true", submission_id=bad)
    slow = client.submit_job(entrypoint="echo started; sleep 120", submission_id="slow-job")
    deadline = time.time() + 60
    while client.get_job_status(slow) is not JobStatus.RUNNING and time.time() < deadline:
        time.sleep(0.2)
    with pytest.raises(RuntimeError, match="stop it"):
        client.delete_job(slow)
    assert client.stop_job(slow) is True
    assert _wait(client, slow) is JobStatus.STOPPED
    assert client.stop_job(slow) is False  # already ended
    assert client.delete_job(slow) is True
    with pytest.raises(RuntimeError, match="does not exist"):
        client.get_job_info(slow)


def test_bad_requests_name_the_problem(head):
    raw = DashboardClient(head["url"])
    response = raw.request("POST", "/api/jobs/", json_data={"entrypoint": "true", "colour": 1})
    assert response.status_code == 400 and "colour" in response.text
    response = raw.request("POST", "/api/jobs/", json_data={"entrypoint": ""})
    assert response.status_code == 400 and "entrypoint" in response.text
    client = JobSubmissionClient(head["url"])
    with pytest.raises(RuntimeError, match="entrypoint_memory"):
        client.submit_job(entrypoint="true", entrypoint_memory=10**9)
    with pytest.raises(ValueError, match="label"):
        client.submit_job(entrypoint="true", entrypoint_label_selector={"a": "b"})
    assert raw.request("GET", "/api/jobs/nope").status_code == 404
    version = raw.request("GET", "/api/version").json()
    assert version["version"] == "4"
    # A Ray 2.x client checks ray_version against the release of each feature it uses.
    assert version["ray_version"] == RAY_JOB_API_RELEASE
    assert version["implementation_version"] == ray.__version__


def test_tail_follows_the_output_until_the_job_ends(head):
    client = JobSubmissionClient(head["url"])
    sid = client.submit_job(entrypoint="for i in 1 2 3; do echo line$i; sleep 0.3; done")

    async def follow():
        return "".join([chunk async for chunk in client.tail_job_logs(sid)])

    text = asyncio.run(asyncio.wait_for(follow(), 60))
    assert text.split() == ["line1", "line2", "line3"]
    assert client.get_job_status(sid) is JobStatus.SUCCEEDED


def test_ray_job_cli_from_another_process(head, workdir):
    env = dict(os.environ, RAY_ADDRESS=head["url"])
    run = lambda *args, timeout=120: subprocess.run(  # noqa: E731
        RAY + ["job", *args], capture_output=True, text=True, timeout=timeout, env=env,
        cwd=str(workdir))
    submitted = run("submit", "--working-dir", ".", "--runtime-env-json",
                    json.dumps({"env_vars": {"OFFSET": "2"}}), "--", "python", "script.py")
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    assert "total 110" in submitted.stdout and "succeeded" in submitted.stdout
    sid = submitted.stdout.split("Job '")[1].split("'")[0]
    status = run("status", sid)
    assert f"Status for job '{sid}': SUCCEEDED" in status.stdout
    assert "total 110" in run("logs", sid).stdout
    listed = json.loads(run("list").stdout)
    assert any(j["submission_id"] == sid for j in listed)
    failing = run("submit", "--", "exit", "1")
    assert failing.returncode == 1 and "failed" in failing.stdout
    missing = run("status", "raysubmit_nope")
    assert missing.returncode != 0 and "does not exist" in missing.stderr


def test_job_and_driver_runtime_envs_merge_and_conflicts_are_errors(monkeypatch):
    monkeypatch.setenv(job_env.JOB_CONFIG_VAR, job_env.job_config_json(
        {"working_dir": "gcs://_ray_pkg_x.zip", "env_vars": {"A": "1"}}))
    merged = job_env.injected_runtime_env({"env_vars": {"B": "2"}})
    assert merged == {"working_dir": "gcs://_ray_pkg_x.zip", "env_vars": {"A": "1", "B": "2"}}
    with pytest.raises(ValueError, match="RAY_OVERRIDE_JOB_RUNTIME_ENV"):
        job_env.injected_runtime_env({"env_vars": {"A": "3"}})
    monkeypatch.setenv(job_env.OVERRIDE_VAR, "1")
    assert job_env.injected_runtime_env({"env_vars": {"A": "3"}})["env_vars"]["A"] == "3"
    monkeypatch.delenv(job_env.JOB_CONFIG_VAR)
    assert job_env.injected_runtime_env({"x": 1}) == {"x": 1}
    monkeypatch.setenv("RAY_ADDRESS", "http://127.0.0.1:8265")
    assert job_env.address_from_environment() is None
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    assert job_env.address_from_environment() == "10.0.0.1:6379"


PEER_CLIENT = textwrap.dedent("""
    import asyncio, sys, time
    from ray.job_submission import JobStatus, JobSubmissionClient

    url, workdir = sys.argv[1:3]
    client = JobSubmissionClient(url)  # checks /api/version: refused below Ray 2.0
    sid = client.submit_job(entrypoint="python script.py", metadata={"by": "ray260"},
                            runtime_env={"working_dir": workdir, "env_vars": {"OFFSET": "3"}},
                            entrypoint_num_cpus=0.5)

    async def tail():
        return "".join([chunk async for chunk in client.tail_job_logs(sid)])

    print("TAIL", repr(asyncio.run(asyncio.wait_for(tail(), 150))))
    info = client.get_job_info(sid)
    print("INFO", info.status, info.driver_exit_code, info.metadata, info.entrypoint)
    print("LOGS", repr(client.get_job_logs(sid)))
    print("LISTED", sid in [job.submission_id for job in client.list_jobs()])
    sleeper = client.submit_job(entrypoint="sleep 600")
    while client.get_job_status(sleeper) is JobStatus.PENDING:
        time.sleep(0.2)
    print("STOPPED", client.stop_job(sleeper))
    while not client.get_job_status(sleeper).is_terminal():
        time.sleep(0.2)
    print("FINAL", client.get_job_status(sleeper), client.delete_job(sleeper))
""")


@pytest.mark.slow
def test_ray_260_job_submission_client_runs_a_job_on_our_server(head, workdir):
    """Ray 2.60's own JobSubmissionClient (its venv, its process) against our job server:
    the version check, a working_dir upload in Ray's package naming, the websocket tail,
    info/logs/list, stop and delete."""
    if not os.path.exists(PEER_PYTHON):
        pytest.skip(f"Ray 2.60 is not installed at {PEER_PYTHON}")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RAY_", "PYTHON", "VIRTUAL_ENV"))}
    result = subprocess.run([PEER_PYTHON, "-c", PEER_CLIENT, head["url"], str(workdir)],
                            capture_output=True, text=True, timeout=240, env=env)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines() if " " in line)
    # sum(2 * i + 3 for i in range(10)): the working_dir's helper and the job's env_vars
    assert "total 120" in lines["TAIL"], result.stdout
    assert "files ['helper.py', 'script.py']" in lines["TAIL"], result.stdout
    assert lines["INFO"] == "SUCCEEDED 0 {'by': 'ray260'} python script.py", result.stdout
    assert "total 120" in lines["LOGS"] and lines["LISTED"] == "True", result.stdout
    assert lines["STOPPED"] == "True" and lines["FINAL"] == "STOPPED True", result.stdout
    # The tail's websocket closed cleanly: its close frame was not read as an HTTP request.
    with open(os.path.join(head["temp_dir"], "session_latest", "logs", "dashboard.out")) as f:
        assert "Bad request" not in f.read()
