"""Errors raised by ray.sgd.

::

    RuntimeError
     └── TrainingFailedError         a replica group failed and no retry is left
          └── RendezvousTimeoutError  replicas did not all connect within timeout_s

Both pickle, name the replicas involved and the cause, and say what to try next.
"""

from __future__ import annotations

__all__ = ["RendezvousTimeoutError", "TrainingFailedError"]


class TrainingFailedError(RuntimeError):
    """A training or validation step failed on one or more replicas.

    ``failed_ranks`` lists the replicas whose call raised or whose process died;
    ``cause`` is the first error seen, as text.
    """

    def __init__(self, message: str, failed_ranks: tuple[int, ...] = (), cause: str = ""):
        super().__init__(message)
        self.failed_ranks = tuple(failed_ranks)
        self.cause = cause

    def __reduce__(self):
        return (type(self), (self.args[0], self.failed_ranks, self.cause))


class RendezvousTimeoutError(TrainingFailedError):
    """The replicas did not all join ``torch.distributed`` within ``timeout_s``.

    Not also a ``TimeoutError``: mixing ``RuntimeError`` and ``OSError`` bases
    breaks ray-core's "RayTaskError that is also the cause's class" wrapper.
    """
