"""`tune.track.log(**metrics)`: report from a function trainable without a reporter argument."""

from ray.tune.function_runner import report


def log(**metrics) -> None:
    """Logs metrics for the current training iteration of the running trial."""
    report(**metrics)


def init(*args, **kwargs) -> None:
    """Kept for compatibility: a session is set up automatically inside a trial."""


def shutdown() -> None:
    """Kept for compatibility."""
