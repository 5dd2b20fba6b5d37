"""Plain-text tables for the ``ray`` commands (no third-party formatter needed)."""

from __future__ import annotations

import json


def cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, default=str)
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") or "0"
    return str(value)


def render(headers: list[str], rows: list[list], *, index: bool = False) -> str:
    """Left-aligned columns separated by two spaces; ``index`` numbers the rows."""
    if index:
        headers = [""] + headers
        rows = [[i, *row] for i, row in enumerate(rows)]
    text = [[cell(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in text]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in text]
    return "\n".join(lines)


def human_bytes(n: float | None) -> str:
    if n is None:
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f}{unit}" if unit == "B" else f"{n:.2f}{unit}"
        n /= 1024
    return str(n)


__all__ = ["cell", "human_bytes", "render"]
