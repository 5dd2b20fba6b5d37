"""Errors of the state API (part of the ``ray.exceptions`` tree: a ``RayError``)."""

from ray.exceptions import RayError


class RayStateApiException(RayError):
    """A state query failed: the source could not be read, or the answer is partial."""


class ServerUnavailable(RayStateApiException):
    """The dashboard (state API server) could not be reached."""


__all__ = ["RayStateApiException", "ServerUnavailable"]
