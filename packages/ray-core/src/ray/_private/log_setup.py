"""The ``ray`` logger: its own handler, ``propagate=False``, as in Ray.

``ray.init()`` configures the logger named ``ray`` (and so every ``ray.*`` logger:
``ray.tune``, ``ray.data``, ...) with one stderr handler and ``propagate=False``, and
leaves the user's root logger alone: a program that set up its own logging before or
after ``ray.init()`` keeps exactly what it configured, and ray's messages are printed
once (not a second time through the root logger's handlers).

``ray.init(logging_level=..., logging_format=...)`` set the level and format of that
handler; ``configure_logging=False`` leaves the ``ray`` logger untouched.
"""

from __future__ import annotations

import logging
import sys

RAY_LOGGER_NAME = "ray"
DEFAULT_FORMAT = "%(asctime)s\t%(levelname)s %(filename)s:%(lineno)s -- %(message)s"


class RayLogHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time of each record (so redirection
    done after ``ray.init()``, e.g. by a test runner or a notebook, is honoured)."""

    def __init__(self):
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value):  # StreamHandler.__init__ assigns it; the property wins
        pass


def parse_level(level) -> int:
    """``logging.INFO``, ``20``, ``"info"`` or ``"INFO"`` -> 20; anything else is an error."""
    if isinstance(level, bool):
        raise ValueError(f"logging_level must be a logging level such as 'info', got {level!r}")
    if isinstance(level, int):
        return level
    if isinstance(level, str):
        value = logging.getLevelName(level.strip().upper())
        if isinstance(value, int):
            return value
    raise ValueError(
        f"logging_level must be a logging level (logging.INFO, 20 or 'info'), got {level!r}"
    )


def configure_ray_logger(level=logging.INFO, fmt: str | None = None) -> logging.Logger:
    """Give the ``ray`` logger one stderr handler of its own; idempotent."""
    logger = logging.getLogger(RAY_LOGGER_NAME)
    numeric = parse_level(level)
    for handler in [h for h in logger.handlers if isinstance(h, RayLogHandler)]:
        logger.removeHandler(handler)
    handler = RayLogHandler()
    handler.setFormatter(logging.Formatter(fmt or DEFAULT_FORMAT))
    logger.addHandler(handler)
    logger.setLevel(numeric)
    logger.propagate = False
    return logger


__all__ = ["DEFAULT_FORMAT", "RAY_LOGGER_NAME", "RayLogHandler", "configure_ray_logger",
           "parse_level"]
