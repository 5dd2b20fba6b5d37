"""Children that die with their parent (Linux ``PR_SET_PDEATHSIG``).

Used by every process ray starts: the raylet, the worker zygote and workers. The
signal follows the *thread* that forked the child, so it is only set where the
parent forks from its main thread.
"""

from __future__ import annotations

import ctypes
import logging
import signal

logger = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent exits (Linux only)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError as exc:  # not glibc Linux: the owner-pid polling still ends children
        logger.debug("no PR_SET_PDEATHSIG here (%s)", exc)
        return
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


__all__ = ["die_with_parent"]
