"""The records of Ray's job API (``ray.job_submission`` re-exports them).

Plain dataclasses with Ray's field names; times are Unix milliseconds. ``JobInfo`` is
what the GCS keeps per submission; ``JobDetails`` is what the REST API and
``JobSubmissionClient.list_jobs()`` return (submissions and plain driver jobs alike).
"""

from __future__ import annotations

import builtins
import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any


class JobStatus(enum.StrEnum):
    PENDING = "PENDING"  # submitted; the supervisor (or its runtime_env) is starting
    RUNNING = "RUNNING"
    STOPPED = "STOPPED"  # stopped by the user
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"

    def is_terminal(self) -> bool:
        return self.value in ("STOPPED", "SUCCEEDED", "FAILED")


class JobErrorType(enum.StrEnum):
    RUNTIME_ENV_SETUP_FAILURE = "RUNTIME_ENV_SETUP_FAILURE"
    JOB_SUPERVISOR_ACTOR_START_TIMEOUT = "JOB_SUPERVISOR_ACTOR_START_TIMEOUT"
    JOB_SUPERVISOR_ACTOR_START_FAILURE = "JOB_SUPERVISOR_ACTOR_START_FAILURE"
    JOB_SUPERVISOR_ACTOR_UNSCHEDULABLE = "JOB_SUPERVISOR_ACTOR_UNSCHEDULABLE"
    JOB_SUPERVISOR_ACTOR_UNKNOWN_FAILURE = "JOB_SUPERVISOR_ACTOR_UNKNOWN_FAILURE"
    JOB_SUPERVISOR_ACTOR_DIED = "JOB_SUPERVISOR_ACTOR_DIED"
    JOB_ENTRYPOINT_COMMAND_START_ERROR = "JOB_ENTRYPOINT_COMMAND_START_ERROR"
    JOB_ENTRYPOINT_COMMAND_ERROR = "JOB_ENTRYPOINT_COMMAND_ERROR"


class JobType(enum.StrEnum):
    SUBMISSION = "SUBMISSION"  # started through the job API
    DRIVER = "DRIVER"  # a script that called ray.init() itself


@dataclass
class JobInfo:
    """One submission, as the GCS keeps it."""

    status: JobStatus
    entrypoint: str
    message: str | None = None
    error_type: JobErrorType | None = None
    start_time: int | None = None
    end_time: int | None = None
    metadata: dict[str, str] | None = None
    runtime_env: dict[str, Any] | None = None
    entrypoint_num_cpus: float | None = None
    entrypoint_num_gpus: float | None = None
    entrypoint_memory: int | None = None
    entrypoint_resources: dict[str, float] | None = None
    driver_agent_http_address: str | None = None
    driver_node_id: str | None = None
    driver_exit_code: int | None = None
    # Ours: the job id of the driver the entrypoint started (once it called ray.init()),
    # and the pid of the entrypoint's process.
    job_id: str | None = None
    driver_pid: int | None = None
    driver_node_ip: str | None = None

    def to_record(self) -> dict:
        record = dataclasses.asdict(self)
        record["status"] = str(self.status)
        record["error_type"] = str(self.error_type) if self.error_type else None
        return record

    @classmethod
    def from_record(cls, record: dict) -> JobInfo:
        names = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in record.items() if k in names}
        values["status"] = JobStatus(values["status"])
        if values.get("error_type"):
            values["error_type"] = JobErrorType(values["error_type"])
        return cls(**values)


@dataclass
class DriverInfo:
    id: str
    node_ip_address: str
    pid: str


@dataclass
class JobDetails:
    """A job as the REST API and ``JobSubmissionClient.list_jobs()`` show it."""

    type: JobType
    status: JobStatus
    entrypoint: str = ""
    job_id: str | None = None
    submission_id: str | None = None
    driver_info: DriverInfo | None = None
    message: str | None = None
    error_type: str | None = None
    start_time: int | None = None
    end_time: int | None = None
    metadata: dict[str, str] | None = None
    runtime_env: dict[str, Any] | None = None
    driver_agent_http_address: str | None = None
    driver_node_id: str | None = None
    driver_exit_code: int | None = None
    extra: dict = field(default_factory=dict, repr=False)

    def dict(self) -> dict:
        out = dataclasses.asdict(self)
        out.pop("extra")
        out["type"] = str(self.type)
        out["status"] = str(self.status)
        return out

    @classmethod
    def from_dict(cls, data: builtins.dict) -> JobDetails:
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        values = {k: v for k, v in data.items() if k in names}
        values["type"] = JobType(values["type"])
        values["status"] = JobStatus(values["status"])
        if isinstance(values.get("driver_info"), dict):
            values["driver_info"] = DriverInfo(**values["driver_info"])
        return cls(**values)


__all__ = ["DriverInfo", "JobDetails", "JobErrorType", "JobInfo", "JobStatus", "JobType"]
