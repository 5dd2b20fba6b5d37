"""Config dict merging and validation with "did you mean" suggestions."""

from __future__ import annotations

import copy
import difflib


class UnknownConfigKeyError(ValueError):
    """A config key that no Trainer understands (usually a typo)."""


def merge_dicts(base: dict, override: dict) -> dict:
    merged = copy.deepcopy(base)
    deep_update(merged, override or {})
    return merged


def deep_update(
    original: dict,
    new: dict,
    new_keys_allowed: bool = True,
    whitelist: frozenset = frozenset(),
    where: str = "config",
) -> dict:
    """Update ``original`` in place; nested dicts merge, except under ``whitelist`` keys."""
    for key, value in new.items():
        if key not in original and not new_keys_allowed:
            raise UnknownConfigKeyError(_unknown_key_message(key, original, where))
        if isinstance(original.get(key), dict) and isinstance(value, dict):
            if key in whitelist:
                original[key] = copy.deepcopy(value)
            else:
                deep_update(original[key], value, True, frozenset(), f"{where}[{key!r}]")
        else:
            original[key] = value
    return original


def _unknown_key_message(key, known: dict, where: str) -> str:
    close = difflib.get_close_matches(str(key), [str(k) for k in known], n=1, cutoff=0.6)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return f"Unknown {where} key {key!r}.{hint} Known keys: {sorted(map(str, known))}"
