"""Errors raised by Tune.

    TuneError              an experiment could not run as asked (bad spec, failed trials)
      AbortTrialExecution  the executor could not start a trial (e.g. not enough resources)
"""


class TuneError(Exception):
    """General error class raised by ray.tune."""


class AbortTrialExecution(TuneError):
    """Raised by the executor when a trial cannot be started."""
