"""`tune.track` (Ray 0.7): log metrics from a function trainable, or from any script.

Inside a Tune trial, `track.log(**metrics)` reports to Tune (like `tune.report`). Outside
one, `track.init(trial_name=..., experiment_dir=..., trial_config=...)` opens a session
that logs to its own trial directory (`params.json`, `result.json`, `progress.csv`)
until `track.shutdown()`:

    from ray.tune import track
    track.init(trial_name="baseline")
    for step in range(10):
        track.log(loss=1.0 / (step + 1))
    print(track.trial_dir())
    track.shutdown()
"""

from __future__ import annotations

import logging
from typing import Any

from ray.tune.track.session import TrackSession

logger = logging.getLogger(__name__)

_session: TrackSession | None = None


def get_session() -> TrackSession:
    """The session `track.init()` opened (raises ValueError when there is none)."""
    if not _session:
        raise ValueError("Session not detected. Try `track.init()`?")
    return _session


def init(ignore_reinit_error: bool = True, **session_kwargs: Any) -> None:
    """Opens this process's session (a second call warns, or raises ValueError if
    `ignore_reinit_error=False`)."""
    global _session
    if _session:
        message = "A session already exists in the current context."
        if ignore_reinit_error:
            logger.warning(message)
            return
        raise ValueError(message)
    _session = TrackSession(**session_kwargs)


def shutdown() -> None:
    """Closes the session (its files are complete afterwards) and forgets it."""
    global _session
    if _session:
        _session.close()
    _session = None


def log(**metrics: Any) -> None:
    """Logs one result: to Tune inside a trial, else to the session `init()` opened."""
    from ray.tune import function_runner

    if _session is None and function_runner.current_reporter() is not None:
        function_runner.report(**metrics)
        return
    get_session().log(**metrics)


def trial_dir() -> str:
    """The directory the session writes its results to."""
    from ray.tune import function_runner

    if _session is None:
        runner = function_runner.current_runner()
        if runner is not None:
            return runner.logdir
    return get_session().logdir


__all__ = ["TrackSession", "get_session", "init", "log", "shutdown", "trial_dir"]
