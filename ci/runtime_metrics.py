"""Structure figures of ray-core's runtime (issue #21), for before/after comparisons.

    python ci/runtime_metrics.py [REPO_ROOT]        # JSON on stdout

- ``core_worker_lines``: lines of ``_private/runtime/core_worker.py``.
- ``collaborator_members``: for each runtime class, how many distinct members it
  uses of each object it was handed (``self.<attr>.<member>`` where ``<attr>`` was
  assigned from a constructor parameter, aliases like ``core = self.core`` included).
- ``function_level_imports``: ``import`` statements inside function bodies anywhere
  in ray-core's sources (``if TYPE_CHECKING`` blocks excluded).
- ``silent_broad_handlers``: ``except Exception``/``BaseException``/bare ``except``
  (and ``contextlib.suppress(Exception)``) that neither re-raise, nor log, nor
  carry a comment saying why.
- ``runtime_annotated_share``: share of functions in ``_private/runtime`` whose
  parameters (bar self/cls) and return are all annotated (``fully``), and with at
  least one annotation (``any``).
"""

from __future__ import annotations

import ast
import json
import os
import sys

BROAD = {"Exception", "BaseException"}
LOG_CALLS = {"debug", "info", "warning", "error", "exception", "critical", "warn", "log"}


def _py_files(root: str):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in sorted(filenames):
            if name.endswith(".py"):
                yield os.path.join(dirpath, name)


def _parse(path: str) -> tuple[ast.Module, list[str]]:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return ast.parse(text), text.splitlines()


def function_level_imports(src: str) -> dict[str, int]:
    counts: dict[str, int] = {}

    def visit(node, in_function: bool, rel: str):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, ast.Import | ast.ImportFrom) and in_function:
                counts[rel] = counts.get(rel, 0) + 1
            inner = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            visit(child, inner, rel)

    for path in _py_files(src):
        tree, _ = _parse(path)
        visit(tree, False, os.path.relpath(path, src))
    return counts


def _is_broad(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(n, ast.Name) and n.id in BROAD for n in names)


def _logs_or_raises(body: list[ast.stmt]) -> bool:
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Raise):
                return True
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in LOG_CALLS:
                return True
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in {"print", "warn"}:
                return True
    return False


def _commented(lines: list[str], first: int, last: int) -> bool:
    return any("#" in lines[i - 1] for i in range(first, last + 1) if 0 < i <= len(lines))


def silent_broad_handlers(src: str) -> list[str]:
    found = []
    for path in _py_files(src):
        tree, lines = _parse(path)
        rel = os.path.relpath(path, src)
        for node in ast.walk(tree):
            if isinstance(node, ast.ExceptHandler) and _is_broad(node):
                end = node.body[0].lineno if node.body else node.lineno
                if not _logs_or_raises(node.body) and not _commented(lines, node.lineno, end):
                    found.append(f"{rel}:{node.lineno}")
            if isinstance(node, ast.With):
                for item in node.items:
                    call = item.context_expr
                    if (isinstance(call, ast.Call) and ast.unparse(call.func).endswith("suppress")
                            and any(ast.unparse(a) in BROAD for a in call.args)
                            and not _commented(lines, node.lineno, node.lineno)):
                        found.append(f"{rel}:{node.lineno}")
    return sorted(found)


def annotated_share(runtime_dir: str) -> dict:
    total = fully = anything = 0
    for path in _py_files(runtime_dir):
        tree, _ = _parse(path)
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            a = node.args
            params = [*a.posonlyargs, *a.args, *a.kwonlyargs]
            if params and params[0].arg in ("self", "cls"):
                params = params[1:]
            params += [p for p in (a.vararg, a.kwarg) if p is not None]
            annotated = [p.annotation is not None for p in params]
            has_return = node.returns is not None or node.name == "__init__"
            total += 1
            if all(annotated) and has_return:
                fully += 1
            if any(annotated) or node.returns is not None:
                anything += 1
    return {"functions": total, "fully": round(fully / total, 3), "any": round(anything / total, 3)}


def collaborator_members(runtime_dir: str) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for path in _py_files(runtime_dir):
        tree, _ = _parse(path)
        for cls in [n for n in tree.body if isinstance(n, ast.ClassDef)]:
            init = next((f for f in cls.body if isinstance(f, ast.FunctionDef)
                         and f.name == "__init__"), None)
            if init is None:
                continue
            params = {p.arg for p in [*init.args.args, *init.args.kwonlyargs][1:]}
            collabs = {}
            for stmt in ast.walk(init):
                if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name) \
                        and stmt.value.id in params:
                    for t in stmt.targets:
                        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) \
                                and t.value.id == "self":
                            collabs[t.attr] = set()
            if not collabs:
                continue
            for fn in [f for f in ast.walk(cls) if isinstance(f, ast.FunctionDef)]:
                aliases = {}
                for node in ast.walk(fn):
                    if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                            and isinstance(node.targets[0], ast.Name) \
                            and isinstance(node.value, ast.Attribute) \
                            and isinstance(node.value.value, ast.Name) \
                            and node.value.value.id == "self" and node.value.attr in collabs:
                        aliases[node.targets[0].id] = node.value.attr
                for node in ast.walk(fn):
                    if not isinstance(node, ast.Attribute):
                        continue
                    base = node.value
                    if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name) \
                            and base.value.id == "self" and base.attr in collabs:
                        collabs[base.attr].add(node.attr)
                    elif isinstance(base, ast.Name) and base.id in aliases:
                        collabs[aliases[base.id]].add(node.attr)
            used = {name: len(members) for name, members in collabs.items() if members}
            if used:
                out[f"{os.path.basename(path)}:{cls.name}"] = used
    return out


def main() -> None:
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))
    src = os.path.join(root, "packages", "ray-core", "src", "ray")
    runtime = os.path.join(src, "_private", "runtime")
    with open(os.path.join(runtime, "core_worker.py")) as f:
        core_lines = sum(1 for _ in f)
    imports = function_level_imports(src)
    silent = silent_broad_handlers(src)
    print(json.dumps({
        "core_worker_lines": core_lines,
        "collaborator_members": collaborator_members(runtime),
        "function_level_imports": sum(imports.values()),
        "function_level_imports_by_file": dict(sorted(imports.items(), key=lambda kv: -kv[1])),
        "silent_broad_handlers": len(silent),
        "silent_broad_handler_sites": silent,
        "runtime_annotated_share": annotated_share(runtime),
    }, indent=1))


if __name__ == "__main__":
    main()
