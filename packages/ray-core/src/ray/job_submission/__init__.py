"""Ray's job API: submit a shell command to a cluster, follow its status and output.

    from ray.job_submission import JobSubmissionClient, JobStatus
    client = JobSubmissionClient("http://127.0.0.1:8265")
    sid = client.submit_job(entrypoint="python script.py", runtime_env={"working_dir": "."})
    client.get_job_status(sid)          # JobStatus.RUNNING ... JobStatus.SUCCEEDED
    print(client.get_job_logs(sid))
"""

from ray._private.job_models import (
    DriverInfo,
    JobDetails,
    JobErrorType,
    JobInfo,
    JobStatus,
    JobType,
)
from ray.job_submission.sdk import JobSubmissionClient

__all__ = ["DriverInfo", "JobDetails", "JobErrorType", "JobInfo", "JobStatus", "JobSubmissionClient",
           "JobType"]
