"""Lazy imports of optional search libraries, with the pip command in the error."""

from __future__ import annotations

import importlib
from types import ModuleType


def require(module: str, pip_name: str, searcher: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"{searcher} needs the {pip_name!r} package, which is not installed: "
            f"pip install {pip_name}"
        ) from exc


def to_builtin(value):
    """numpy scalars -> Python numbers, so configs log and pickle cleanly."""
    if hasattr(value, "item") and callable(value.item):
        try:
            return value.item()
        except (TypeError, ValueError):
            return value
    return value
