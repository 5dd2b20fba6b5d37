"""Ray jobs: a job manager on the head and one supervisor actor per submitted job.

::

    JobSubmissionClient / `ray job ...`  --HTTP-->  dashboard (head): JobManager
        JobManager.submit: record PENDING in the GCS, create the job's JobSupervisor
            (a detached actor in the job's runtime_env, num_cpus=entrypoint_num_cpus or 0)
            and call its run(); a thread per job waits for the answer.
        JobSupervisor.run: start the entrypoint as a shell command (its own process
            group; RAY_ADDRESS etc. from ``job_env``), pump its output into the GCS,
            record RUNNING, link the driver's job id once it called ray.init(), wait,
            record SUCCEEDED / FAILED (exit code) / STOPPED.
        JobManager.stop: supervisor.stop() (SIGTERM to the group, SIGKILL after 3 s).

Everything about a submission lives in the GCS (``JobStore``): the record in
``ray:job_submissions`` and the output as a bounded list of numbered chunks in
``ray:job_logs:<id>``, so a restarted dashboard, ``ray job status`` and ``ray job logs``
all read the same state. The supervisor writes the job's progress itself, so a job
finishes and is recorded even if the dashboard goes away meanwhile.
"""

from __future__ import annotations

import logging
import os
import secrets
import signal
import string
import subprocess
import sys
import threading
import time
from typing import Any

import msgpack

from ray._private import job_env
from ray._private.gcs import keys
from ray._private.job_models import (
    DriverInfo,
    JobDetails,
    JobErrorType,
    JobInfo,
    JobStatus,
    JobType,
)

logger = logging.getLogger(__name__)

SUPERVISOR_NAMESPACE = "SUPERVISOR_ACTOR_RAY_NAMESPACE"
STOP_GRACE_S = 3.0  # SIGTERM, then SIGKILL (Ray's RAY_JOB_STOP_WAIT_TIME_S default)
LOG_CHUNK_BYTES = 64 * 1024
LOG_FLUSH_S = 0.1
MAX_LOG_CHUNKS = 256  # per job: at most ~16 MiB of output is kept (the newest)
LOG_TAIL_IN_MESSAGE = 20_000


def supervisor_name(submission_id: str) -> str:
    return f"_ray_internal_job_actor_{submission_id}"


def new_submission_id() -> str:
    alphabet = string.ascii_letters + string.digits
    return "raysubmit_" + "".join(secrets.choice(alphabet) for _ in range(16))


def _now_ms() -> int:
    return int(time.time() * 1000)


# -- the GCS side ----------------------------------------------------------------------------
class JobStore:
    """Submissions and their output in the GCS."""

    def __init__(self, gcs):
        self.gcs = gcs

    def put(self, submission_id: str, info: JobInfo) -> None:
        self.gcs.hset_obj(keys.JOB_SUBMISSIONS, submission_id, info.to_record())

    def get(self, submission_id: str) -> JobInfo | None:
        record = self.gcs.hget_obj(keys.JOB_SUBMISSIONS, submission_id)
        return None if record is None else JobInfo.from_record(record)

    def update(self, submission_id: str, **fields) -> JobInfo:
        info = self.get(submission_id)
        if info is None:
            raise KeyError(submission_id)
        for name, value in fields.items():
            setattr(info, name, value)
        self.put(submission_id, info)
        return info

    def all(self) -> dict[str, JobInfo]:
        return {sid: JobInfo.from_record(rec)
                for sid, rec in self.gcs.hgetall_obj(keys.JOB_SUBMISSIONS).items()}

    def delete(self, submission_id: str) -> None:
        self.gcs.hdel(keys.JOB_SUBMISSIONS, submission_id)
        self.gcs.delete(keys.job_logs(submission_id))

    def append_log(self, submission_id: str, seq: int, chunk: bytes) -> None:
        self.gcs.rpush_many(keys.job_logs(submission_id),
                            [msgpack.packb([seq, chunk], use_bin_type=True)],
                            max_len=MAX_LOG_CHUNKS)

    def read_log(self, submission_id: str, from_seq: int = 0) -> tuple[bytes, int]:
        """Output from chunk ``from_seq`` on (chunks trimmed away are skipped) and the
        sequence number to ask for next."""
        key = keys.job_logs(submission_id)
        head = self.gcs.lrange(key, 0, 0)
        if not head:
            return b"", from_seq
        first_seq = msgpack.unpackb(head[0], raw=False)[0]
        raw = self.gcs.lrange(key, max(0, from_seq - first_seq), -1)
        out, next_seq = [], from_seq
        for item in raw:
            seq, chunk = msgpack.unpackb(item, raw=False)
            if seq >= next_seq:
                out.append(chunk)
                next_seq = seq + 1
        return b"".join(out), next_seq


# -- the supervisor actor --------------------------------------------------------------------
class JobSupervisor:
    """Runs one job's entrypoint (the class becomes an actor in ``JobManager.submit``)."""

    def __init__(self, submission_id: str, entrypoint: str, gcs_address: str,
                 runtime_env: dict | None, metadata: dict | None):
        from ray._private import auth
        from ray._private.gcs import connect

        self.submission_id = submission_id
        self.entrypoint = entrypoint
        self.gcs_address = gcs_address
        self.runtime_env = runtime_env or {}
        self.metadata = metadata or {}
        self.store = JobStore(connect(gcs_address, auth.cluster_secret()))
        self.proc: subprocess.Popen | None = None
        self.stop_requested = threading.Event()
        self._start_lock = threading.Lock()  # stop() never misses a process being started

    def ping(self) -> bool:
        return True

    def run(self) -> str:
        """Run the entrypoint to its end; returns the final status."""
        import ray

        node_id = ray.get_runtime_context().get_node_id()
        node_ip = ray.util.get_node_ip_address()
        env = dict(os.environ)
        env["RAY_ADDRESS"] = self.gcs_address
        env[job_env.SUBMISSION_ID_VAR] = self.submission_id
        env[job_env.JOB_CONFIG_VAR] = job_env.job_config_json(self.runtime_env, self.metadata)
        env["PYTHONUNBUFFERED"] = "1"  # the output shows up as it is printed
        # `python` in the entrypoint is the cluster's Python (the one ray runs on), even
        # when `ray start` ran from a virtualenv that was not activated.
        env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
        with self._start_lock:
            if self.stop_requested.is_set():
                return self._finish(JobStatus.STOPPED, "Job was stopped before it started.",
                                    None)
            try:
                self.proc = subprocess.Popen(
                    self.entrypoint, shell=True, stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                    start_new_session=True)
            except OSError as exc:
                return self._finish(JobStatus.FAILED, f"Failed to start the entrypoint: {exc}",
                                    None, JobErrorType.JOB_ENTRYPOINT_COMMAND_START_ERROR)
        self.store.update(self.submission_id, status=JobStatus.RUNNING,
                          message="Job is currently running.", driver_pid=self.proc.pid,
                          driver_node_id=node_id, driver_node_ip=node_ip)
        proc = self.proc
        pump = threading.Thread(target=self._pump_output, args=(proc,), name="job-log-pump",
                                daemon=True)
        pump.start()
        threading.Thread(target=self._link_driver, args=(proc,), name="job-link-driver",
                         daemon=True).start()
        code = proc.wait()
        pump.join(timeout=10)
        if self.stop_requested.is_set():
            return self._finish(JobStatus.STOPPED, "Job was intentionally stopped.", code)
        if code == 0:
            return self._finish(JobStatus.SUCCEEDED, "Job finished successfully.", code)
        tail, _ = self.store.read_log(self.submission_id)
        tail_text = tail[-LOG_TAIL_IN_MESSAGE:].decode("utf-8", "replace")
        return self._finish(
            JobStatus.FAILED,
            f"Job entrypoint command failed with exit code {code}, last available logs "
            f"(truncated to {LOG_TAIL_IN_MESSAGE} chars):\n{tail_text}",
            code, JobErrorType.JOB_ENTRYPOINT_COMMAND_ERROR)

    def stop(self) -> bool:
        """Stop the entrypoint's process group; True if it was running."""
        with self._start_lock:
            self.stop_requested.set()
            proc = self.proc
        if proc is None:  # run() will not start it
            return True
        if proc.poll() is not None:
            return False
        _signal_group(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if proc.poll() is None:
            _signal_group(proc.pid, signal.SIGKILL)
        return True

    def _finish(self, status, message, code, error_type=None) -> str:
        self.store.update(self.submission_id, status=status, message=message,
                          error_type=error_type, end_time=_now_ms(), driver_exit_code=code)
        return str(status)

    def _pump_output(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None  # started with stdout=PIPE
        fd = proc.stdout.fileno()
        seq, pending, last_flush = 0, [], time.monotonic()
        import select

        while True:
            ready, _, _ = select.select([fd], [], [], LOG_FLUSH_S)
            data = os.read(fd, LOG_CHUNK_BYTES) if ready else None
            if data:
                pending.append(data)
            size = sum(len(p) for p in pending)
            if pending and (data == b"" or size >= LOG_CHUNK_BYTES
                            or time.monotonic() - last_flush >= LOG_FLUSH_S):
                self.store.append_log(self.submission_id, seq, b"".join(pending))
                seq, pending, last_flush = seq + 1, [], time.monotonic()
            if data == b"":  # the entrypoint (and everything sharing its output) exited
                return

    def _link_driver(self, proc: subprocess.Popen) -> None:
        """Record the job id of the driver the entrypoint starts (it calls ray.init())."""
        import psutil

        from ray._private import state

        while proc.poll() is None:
            try:
                family = {proc.pid} | {p.pid for p in psutil.Process(proc.pid).children(True)}
            except psutil.Error:
                return
            for job_hex, entry in state.jobs_from_gcs(self.store.gcs).items():
                if entry.get("driver_pid") in family:
                    self.store.update(self.submission_id, job_id=job_hex)
                    return
            time.sleep(0.2)


def _signal_group(pid: int, sig) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already gone


# -- the manager (in the dashboard process) ----------------------------------------------------
class JobManager:
    """Submits, stops and watches jobs; connects this process to the cluster as a driver
    on first use (so a dashboard nobody submits jobs to costs nothing more)."""

    def __init__(self, gcs, gcs_address: str):
        self.store = JobStore(gcs)
        self.gcs_address = gcs_address
        self._lock = threading.Lock()
        self._connected = False
        self._handles: dict[str, Any] = {}  # submission id -> its supervisor's actor handle

    def _connect(self):
        import ray

        with self._lock:
            if self._connected:
                return ray
            os.environ.setdefault("PLASMA_CLIENT_PREFAULT_BYTES", "0")  # no big puts here
            ray.init(address=self.gcs_address, namespace=SUPERVISOR_NAMESPACE,
                     log_to_driver=False, configure_logging=False)
            _mark_internal_job(self.store.gcs, ray.get_runtime_context().get_job_id())
            self._connected = True
            self._recover(ray)
            return ray

    def _recover(self, ray) -> None:
        """Watch the jobs a previous dashboard started (their supervisors carry on)."""
        for sid, info in self.store.all().items():
            if info.status.is_terminal():
                continue
            try:
                handle = ray.get_actor(supervisor_name(sid), namespace=SUPERVISOR_NAMESPACE)
            except ValueError:
                self.store.update(sid, status=JobStatus.FAILED, end_time=_now_ms(),
                                  error_type=JobErrorType.JOB_SUPERVISOR_ACTOR_DIED,
                                  message="The job's supervisor is gone (the cluster lost it).")
                continue
            self._handles[sid] = handle
            self._watch(sid, handle, handle.run.remote())

    def submit(self, *, entrypoint: str, submission_id: str | None = None,
               runtime_env: dict | None = None, metadata: dict | None = None,
               entrypoint_num_cpus: float | None = None,
               entrypoint_num_gpus: float | None = None,
               entrypoint_memory: int | None = None,
               entrypoint_resources: dict | None = None) -> str:
        _check_submission(entrypoint, runtime_env, metadata, entrypoint_num_cpus,
                          entrypoint_num_gpus, entrypoint_memory, entrypoint_resources)
        submission_id = submission_id or new_submission_id()
        ray = self._connect()  # first: recovery must not see this job half-submitted
        info = JobInfo(status=JobStatus.PENDING, entrypoint=entrypoint,
                       message="Job has not started yet.", start_time=_now_ms(),
                       metadata=metadata or {}, runtime_env=runtime_env or {},
                       entrypoint_num_cpus=entrypoint_num_cpus,
                       entrypoint_num_gpus=entrypoint_num_gpus,
                       entrypoint_resources=entrypoint_resources)
        with self._lock:
            if self.store.get(submission_id) is not None:
                raise ValueError(f"Job with submission_id {submission_id} already exists. "
                                 "Please use a different submission_id.")
            self.store.put(submission_id, info)
        options: dict[str, Any] = {
            "name": supervisor_name(submission_id), "namespace": SUPERVISOR_NAMESPACE,
            "lifetime": "detached", "num_cpus": entrypoint_num_cpus or 0, "max_concurrency": 4}
        if entrypoint_num_gpus:
            options["num_gpus"] = entrypoint_num_gpus
        if entrypoint_resources:
            options["resources"] = dict(entrypoint_resources)
        if runtime_env:
            options["runtime_env"] = runtime_env
        try:
            handle = ray.remote(JobSupervisor).options(**options).remote(
                submission_id, entrypoint, self.gcs_address, runtime_env, metadata)
        except Exception as exc:  # noqa: BLE001 - recorded on the job, then re-raised
            self.store.update(submission_id, status=JobStatus.FAILED, end_time=_now_ms(),
                              error_type=JobErrorType.JOB_SUPERVISOR_ACTOR_START_FAILURE,
                              message=f"Failed to start the job's supervisor: {exc}")
            raise
        self._handles[submission_id] = handle
        self._watch(submission_id, handle, handle.run.remote())
        return submission_id

    def _watch(self, submission_id: str, handle, result) -> None:
        def wait():
            import ray

            try:
                ray.get(result)
            except Exception as exc:  # noqa: BLE001 - every failure is recorded on the job
                self._supervisor_failed(submission_id, exc)
            finally:
                self._handles.pop(submission_id, None)
                try:
                    ray.kill(handle)
                except Exception:  # noqa: BLE001 - already dead is fine
                    logger.debug("supervisor of %s already gone", submission_id)

        threading.Thread(target=wait, name=f"job-watch-{submission_id}", daemon=True).start()

    def _supervisor_failed(self, submission_id: str, exc: BaseException) -> None:
        logger.warning("job %s: its supervisor failed: %s", submission_id, exc)
        info = self.store.get(submission_id)
        if info is None or info.status.is_terminal():
            return
        from ray.exceptions import RuntimeEnvSetupError

        if isinstance(exc, RuntimeEnvSetupError):
            error_type = JobErrorType.RUNTIME_ENV_SETUP_FAILURE
            message = f"runtime_env setup failed: {exc}"
        elif info.status is JobStatus.PENDING:
            error_type = JobErrorType.JOB_SUPERVISOR_ACTOR_START_FAILURE
            message = f"The job's supervisor failed to start: {exc}"
        else:
            error_type = JobErrorType.JOB_SUPERVISOR_ACTOR_DIED
            message = f"The job's supervisor died: {exc}"
        self.store.update(submission_id, status=JobStatus.FAILED, end_time=_now_ms(),
                          error_type=error_type, message=message)

    def stop(self, submission_id: str) -> bool:
        """Stop a running job; False if it had already ended."""
        info = self._existing(submission_id)
        if info.status.is_terminal():
            return False
        ray = self._connect()
        handle = self._handles.get(submission_id)
        if handle is None:
            try:
                handle = ray.get_actor(supervisor_name(submission_id),
                                       namespace=SUPERVISOR_NAMESPACE)
            except ValueError:
                self.store.update(submission_id, status=JobStatus.STOPPED, end_time=_now_ms(),
                                  message="Job was stopped (its supervisor was already gone).")
                return True
        if self._existing(submission_id).status is JobStatus.PENDING:
            handle.stop.remote()  # may wait for the supervisor to start
            return True
        try:
            return bool(ray.get(handle.stop.remote(), timeout=STOP_GRACE_S + 30))
        except ray.exceptions.RayActorError:
            # run() returned as the process exited and the supervisor was retired while
            # stop() was still waiting for it: the job is over, stopped by this call.
            return self._existing(submission_id).status is JobStatus.STOPPED

    def delete(self, submission_id: str) -> bool:
        info = self._existing(submission_id)
        if not info.status.is_terminal():
            raise ValueError(f"Job {submission_id} is {info.status}: stop it (ray job stop) "
                             "before deleting it.")
        self.store.delete(submission_id)
        return True

    def info(self, submission_id: str) -> JobInfo | None:
        return self.store.get(submission_id)

    def logs(self, submission_id: str) -> str:
        self._existing(submission_id)
        data, _ = self.store.read_log(submission_id)
        return data.decode("utf-8", "replace")

    def _existing(self, submission_id: str) -> JobInfo:
        info = self.store.get(submission_id)
        if info is None:
            raise KeyError(f"Job {submission_id} does not exist")
        return info


def _check_submission(entrypoint, runtime_env, metadata, num_cpus, num_gpus, memory,
                      resources) -> None:
    if not isinstance(entrypoint, str) or not entrypoint.strip():
        raise ValueError("entrypoint must be a non-empty shell command, e.g. "
                         "'python script.py'")
    for name, value in (("entrypoint_num_cpus", num_cpus), ("entrypoint_num_gpus", num_gpus)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                  or value < 0):
            raise ValueError(f"{name} must be a number >= 0, got {value!r}")
    if memory:
        raise ValueError(
            "entrypoint_memory is not supported: nodes here do not account memory as a "
            "resource. Reserve a custom resource with entrypoint_resources instead.")
    if resources is not None and (not isinstance(resources, dict) or not all(
            isinstance(k, str) and isinstance(v, int | float) and v >= 0
            for k, v in resources.items())):
        raise ValueError(f"entrypoint_resources must map names to numbers >= 0, "
                         f"got {resources!r}")
    if runtime_env is not None and not isinstance(runtime_env, dict):
        raise ValueError(f"runtime_env must be a dict, got {type(runtime_env).__name__}")
    if runtime_env:
        from ray._private import runtime_env as renv

        renv.validate(runtime_env)
        local = [k for k in ("working_dir",) if runtime_env.get(k)
                 and not str(runtime_env[k]).startswith("gcs://")]
        local += [p for p in runtime_env.get("py_modules") or () if not str(p).startswith("gcs://")]
        if local:
            raise ValueError(
                f"runtime_env paths must be uploaded packages (gcs://...) when submitted over "
                f"HTTP, got {local}: JobSubmissionClient and `ray job submit` upload local "
                "directories for you.")
    if metadata is not None and (not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise ValueError(f"metadata must map strings to strings, got {metadata!r}")


def _mark_internal_job(gcs, job_hex: str) -> None:
    """The dashboard's own driver is not a user's job: list_jobs leaves it out."""
    entry = gcs.hget_obj(keys.JOBS, job_hex)
    if entry is not None:
        entry["internal"] = True
        gcs.hset_obj(keys.JOBS, job_hex, entry)


# -- what the job API and the state API list --------------------------------------------------
def job_details(gcs) -> list[JobDetails]:
    """Submitted jobs and driver jobs, newest first; a driver a submission started is
    shown as that submission (with its job id and driver info)."""
    from ray._private import state

    drivers = {job: entry for job, entry in state.jobs_from_gcs(gcs).items()
               if not entry.get("internal")}
    out = []
    for sid, info in JobStore(gcs).all().items():
        driver = drivers.pop(info.job_id, None) if info.job_id else None
        out.append(JobDetails(
            type=JobType.SUBMISSION, status=info.status, entrypoint=info.entrypoint,
            job_id=info.job_id, submission_id=sid,
            driver_info=_driver_info(info.job_id or "", driver) if driver else None,
            message=info.message, error_type=str(info.error_type) if info.error_type else None,
            start_time=info.start_time, end_time=info.end_time, metadata=info.metadata,
            runtime_env=info.runtime_env, driver_agent_http_address=None,
            driver_node_id=info.driver_node_id, driver_exit_code=info.driver_exit_code))
    for job_hex, entry in drivers.items():
        alive = entry.get("alive", True)
        end = entry.get("end_time")
        out.append(JobDetails(
            type=JobType.DRIVER, status=JobStatus.RUNNING if alive else JobStatus.SUCCEEDED,
            entrypoint=entry.get("entrypoint", ""), job_id=job_hex,
            driver_info=_driver_info(job_hex, entry),
            start_time=int(entry["start_time"] * 1000) if entry.get("start_time") else None,
            end_time=int(end * 1000) if end else None))
    out.sort(key=lambda d: d.start_time or 0, reverse=True)
    return out


def _driver_info(job_hex: str, entry: dict) -> DriverInfo:
    return DriverInfo(id=job_hex, node_ip_address=entry.get("node_ip", ""),
                      pid=str(entry.get("driver_pid", "")))


def job_rows(gcs) -> list[dict]:
    """The state API's JobState rows."""
    rows = []
    for details in job_details(gcs):
        row = details.dict()
        rows.append(row)
    return rows


__all__ = ["SUPERVISOR_NAMESPACE", "JobManager", "JobStore", "JobSupervisor", "job_details",
           "job_rows", "new_submission_id", "supervisor_name"]
