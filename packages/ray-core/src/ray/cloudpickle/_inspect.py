"""Find what stops an object from pickling (``ray.util.inspect_serializability``).

It lives with the pickler so that ray's runtime, which may not import ``ray.util``,
can put the report into its serialization errors.

    ok, failures = inspect_serializability(my_function)
    # prints a report; failures is a set of FailureTuple(obj, name, parent)

A function is searched through the globals and closure variables it uses, any other
object through its functions and attributes, down to ``depth`` levels. The deepest
object that fails on its own is reported (where nothing inside explains the failure,
the object itself).
"""

from __future__ import annotations

import inspect
import sys
from typing import Any


class FailureTuple:
    """One object that cannot be pickled: the object, its variable name, and the
    object that refers to it."""

    def __init__(self, obj: Any, name: str, parent: Any):
        self.obj = obj
        self.name = name
        self.parent = parent

    def __repr__(self):
        return f"FailTuple({self.name} [obj={self.obj}, parent={self.parent}])"


class _Report:
    """Indented lines to ``file`` (stdout by default)."""

    def __init__(self, file):
        self.file = file
        self.level = 0

    def line(self, text: str) -> None:
        print("    " * self.level + text, file=self.file or sys.stdout)


def inspect_serializability(base_obj: Any, name: str | None = None, depth: int = 3,
                            print_file: Any = None) -> tuple[bool, set[FailureTuple]]:
    """Return ``(serializable, failures)`` and print where pickling ``base_obj`` fails.

    ``depth`` bounds how far into closures and attributes the search goes;
    ``print_file`` is where the report goes (stdout by default).
    """
    if not isinstance(depth, int) or depth < 0:
        raise ValueError(f"depth must be a non-negative int, got {depth!r}")
    report = _Report(print_file)
    title = f"Checking Serializability of {base_obj}"
    rule = "=" * min(len(title), 80)
    for text in (rule, title, rule):
        report.line(text)
    failures: set[FailureTuple] = set()
    ok = _inspect(base_obj, name or str(base_obj), depth, None, failures, report)
    if not ok:
        report.line(rule)
        names = "\n".join(str(f) for f in failures)
        report.line(f"Variable: \n\n\t{names}\n\nwas found to be non-serializable. There "
                    "may be other non-serializable variables that were not detected.")
        report.line("Consider removing these variables from the function's or class's "
                    "scope, or creating them inside it.")
    report.line(rule)
    return ok, failures


def _pickles(obj: Any, report: _Report) -> bool:
    try:
        from ray.cloudpickle import dumps

        dumps(obj)
    except Exception as exc:  # noqa: BLE001 - any failure is what we are looking for
        report.line(f"!!! FAIL serialization: {exc}")
        return False
    return True


def _inspect(obj, name, depth, parent, failures, report) -> bool:
    """True if ``obj`` pickles; else record the culprit(s) and return False."""
    if parent is not None:
        report.line(f"Serializing '{name}' {obj}...")
    if _pickles(obj, report):
        return True
    found_inside = False
    if depth > 0:
        report.level += 1
        children = _closure_vars(obj) if inspect.isfunction(obj) else _members(obj)
        for child_name, child in children:
            if not _inspect(child, child_name, depth - 1, obj, failures, report):
                found_inside = True
                break
        report.level -= 1
    if not found_inside:
        failures.add(FailureTuple(obj, name, parent))
    return False


def _closure_vars(fn) -> list[tuple[str, Any]]:
    try:
        closure = inspect.getclosurevars(fn)
    except (TypeError, ValueError):  # builtins and odd callables have no closure info
        return []
    return [*closure.globals.items(), *closure.nonlocals.items()]


def _members(obj) -> list[tuple[str, Any]]:
    try:
        members = inspect.getmembers(obj)
    except Exception:  # noqa: BLE001 - a broken __getattr__ must not stop the search
        return []
    functions = [(n, m) for n, m in members if inspect.isfunction(m)]
    attributes = [(n, m) for n, m in members
                  if not (n.startswith("__") and n.endswith("__"))
                  and not inspect.isbuiltin(m) and not inspect.isfunction(m)]
    return functions + attributes


__all__ = ["FailureTuple", "inspect_serializability"]
