"""Turn keyword arguments into errors that suggest the right name."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def unknown_keyword_error(where: str, key: str, valid: Iterable[str]) -> TypeError:
    hint = difflib.get_close_matches(key, list(valid), n=1)
    suffix = f" Did you mean {hint[0]!r}?" if hint else ""
    return TypeError(f"{where} got an unexpected keyword argument {key!r}.{suffix}")
