"""Call-time argument checks: ``f.remote(...)`` binds its arguments to ``f``'s signature
in the caller, so a wrong call raises ``TypeError`` at once (as in Ray), not later in a
worker.

A ``CallSignature`` keeps only what binding needs (names, kinds, which parameters have
a default), so it is cheap to pickle with an actor handle and fits the msgpack of the
GCS actor table. The common call (positional arguments only, a count the function
accepts) is checked without building an ``inspect.BoundArguments``.
"""

from __future__ import annotations

import inspect
from typing import Any

_P = inspect.Parameter
_KINDS = (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD, _P.VAR_POSITIONAL, _P.KEYWORD_ONLY,
          _P.VAR_KEYWORD)


class _HasDefault:
    """Stands for a parameter's default value (binding only needs to know there is one)."""

    def __repr__(self) -> str:
        return "<default>"


_DEFAULT = _HasDefault()


class CallSignature:
    """The parameters a call binds to, without their default values."""

    __slots__ = ("_params", "_min_pos", "_max_pos", "_kw_required", "_signature")

    def __init__(self, params: list[tuple[str, int, bool]]):
        self._params = params  # (name, kind index into _KINDS, has default)
        positional = [p for p in params if p[1] in (0, 1)]
        self._min_pos = sum(1 for p in positional if not p[2])
        self._max_pos = None if any(p[1] == 2 for p in params) else len(positional)
        self._kw_required = any(p[1] == 3 and not p[2] for p in params)
        self._signature: inspect.Signature | None = None

    @classmethod
    def of(cls, fn: Any, *, drop_first: bool = False) -> CallSignature | None:
        """``fn``'s signature (without its first parameter: an unbound method's ``self``);
        None when Python cannot tell (some builtins and extension functions)."""
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            return None
        if drop_first and params and params[0].kind in (_P.POSITIONAL_ONLY,
                                                         _P.POSITIONAL_OR_KEYWORD):
            params = params[1:]
        return cls([(p.name, _KINDS.index(p.kind), p.default is not _P.empty) for p in params])

    def to_wire(self) -> list:
        return [list(p) for p in self._params]

    @classmethod
    def from_wire(cls, wire: Any) -> CallSignature:
        return cls([(str(name), int(kind), bool(has_default)) for name, kind, has_default in wire])

    def __reduce__(self):
        return CallSignature.from_wire, (self.to_wire(),)

    def check(self, args: tuple | list, kwargs: dict, what: str) -> None:
        """Raise ``TypeError`` naming ``what`` unless ``what(*args, **kwargs)`` binds."""
        n = len(args)
        if not kwargs and not self._kw_required and n >= self._min_pos \
                and (self._max_pos is None or n <= self._max_pos):
            return
        signature = self._signature
        if signature is None:
            signature = self._signature = inspect.Signature([
                _P(name, _KINDS[kind], default=_DEFAULT if has_default else _P.empty)
                for name, kind, has_default in self._params])
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{what}: {exc}") from None


__all__ = ["CallSignature"]
