"""Uploads an experiment directory to `upload_dir` (S3, GCS or a custom command/function)."""

from __future__ import annotations

import logging
import subprocess
import time
from typing import Any

from ray.tune.error import TuneError
from ray.tune.sample import function as tune_function

logger = logging.getLogger(__name__)

S3_PREFIX = "s3://"
GCS_PREFIX = "gs://"


def sync_command_template(upload_dir: str, sync_function: Any) -> Any:
    """Returns a template string or a `(local_dir, remote_dir)` function, or raises."""
    if isinstance(sync_function, tune_function):
        return sync_function.func
    if callable(sync_function):
        return sync_function
    if isinstance(sync_function, str):
        if "{local_dir}" not in sync_function or "{remote_dir}" not in sync_function:
            raise TuneError(
                f"sync_function template {sync_function!r} must contain {{local_dir}} and "
                "{remote_dir}"
            )
        return sync_function
    if upload_dir.startswith(S3_PREFIX):
        return "aws s3 sync {local_dir} {remote_dir}"
    if upload_dir.startswith(GCS_PREFIX):
        return "gsutil rsync -r {local_dir} {remote_dir}"
    raise TuneError(
        f"upload_dir {upload_dir!r} must start with {S3_PREFIX} or {GCS_PREFIX}, or give a "
        "sync_function (a template string or tune.function(f(local_dir, remote_dir)))"
    )


class Syncer:
    """Runs one sync at a time, at most every `interval_s` (and always on `close`)."""

    def __init__(self, local_dir: str, remote_dir: str, sync_function: Any = None, interval_s: float = 300):
        self.local_dir = local_dir
        self.remote_dir = remote_dir
        self.template = sync_command_template(remote_dir, sync_function)
        self.interval_s = interval_s
        self._last = -float("inf")
        self._process: subprocess.Popen | None = None

    def maybe_sync(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < self.interval_s:
            return
        if self._process is not None and self._process.poll() is None:
            if not force:
                return
            self._process.wait()
        self._last = now
        if callable(self.template):
            self.template(self.local_dir, self.remote_dir)
            return
        command = self.template.format(local_dir=self.local_dir, remote_dir=self.remote_dir)
        self._process = subprocess.Popen(command, shell=True)

    def close(self) -> None:
        self.maybe_sync(force=True)
        if self._process is not None:
            code = self._process.wait()
            if code != 0:
                logger.warning("sync to %s exited with %s", self.remote_dir, code)
