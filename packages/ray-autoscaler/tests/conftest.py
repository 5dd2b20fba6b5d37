"""Shared fixtures of the autoscaler tests (helper modules sit next to this file)."""

from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    # --import-mode=importlib does not put test directories on sys.path.
    sys.path.insert(0, _HERE)
