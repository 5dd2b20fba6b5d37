"""Old (0.6) names that still resolve, with a DeprecationWarning naming the new one."""

from __future__ import annotations

import warnings


def deprecated_aliases(module_name: str, aliases: dict):
    """A module ``__getattr__`` serving ``aliases`` (old name -> (new name, loader))."""

    def __getattr__(name):
        if name in aliases:
            new_name, load = aliases[name]
            warnings.warn(f"{module_name}.{name} is deprecated: use {new_name}",
                          DeprecationWarning, stacklevel=2)
            return load()
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    return __getattr__
