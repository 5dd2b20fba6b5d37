"""The libraries (tune, rllib, sgd, autoscaler, train) import only public ``ray``.

    python ci/check_library_imports.py     # exit 1 and list every import of ray._private

An AST walk over their sources (import-linter cannot follow the ``ray`` namespace
across distributions); function-level and ``TYPE_CHECKING`` imports count too.
"""

from __future__ import annotations

import ast
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBRARIES = ("ray-tune", "ray-rllib", "ray-sgd", "ray-autoscaler")


def violations() -> list[str]:
    found = []
    for lib in LIBRARIES:
        src = os.path.join(ROOT, "packages", lib, "src")
        for dirpath, dirnames, filenames in os.walk(src):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for name in filenames:
                if not name.endswith(".py"):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8") as f:
                    tree = ast.parse(f.read(), path)
                for node in ast.walk(tree):
                    names = []
                    if isinstance(node, ast.Import):
                        names = [a.name for a in node.names]
                    elif isinstance(node, ast.ImportFrom) and node.module:
                        names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                    if any(n == "ray._private" or n.startswith("ray._private.") for n in names):
                        found.append(f"{os.path.relpath(path, ROOT)}:{node.lineno}")
    return found


if __name__ == "__main__":
    bad = violations()
    for where in bad:
        print(f"{where}: imports ray._private (libraries use only the public ray API)")
    sys.exit(1 if bad else 0)
