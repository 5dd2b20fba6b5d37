"""Type-check ``ray._private`` and ``plasma`` with mypy; modules listed in
``ci/mypy_exemptions.txt`` may still have errors, and that list may only shrink.

    python ci/check_types.py          # exit 1 on an error outside the list, or on a
                                      # listed module that no longer has any (remove it)

One mypy run without exemptions: errors are then split into listed and unlisted
modules, so a module that becomes clean is noticed (and must leave the list).
"""

from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXEMPTIONS = os.path.join(ROOT, "ci", "mypy_exemptions.txt")
SOURCE_ROOTS = ("packages/ray-core/src/", "packages/ray-plasma/src/")


def _listed() -> set[str]:
    with open(EXEMPTIONS) as f:
        return {line.strip() for line in f if line.strip() and not line.startswith("#")}


def main() -> int:
    cmd = [sys.executable, "-m", "mypy", "-p", "plasma", "-p", "ray._private"]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if out.returncode not in (0, 1) or "error:" not in out.stdout and out.returncode:
        print(out.stdout, out.stderr, sep="\n")
        return 2
    by_file: dict[str, list[str]] = {}
    for line in out.stdout.splitlines():
        path, sep, _ = line.partition(":")
        if not sep or ": error:" not in line:
            continue
        for prefix in SOURCE_ROOTS:
            path = path.removeprefix(prefix)
        by_file.setdefault(path, []).append(line)
    listed = _listed()
    new = {path: errors for path, errors in by_file.items() if path not in listed}
    clean = sorted(path for path in listed if path not in by_file
                   and any(os.path.exists(os.path.join(ROOT, r, path)) for r in SOURCE_ROOTS))
    for errors in new.values():
        print("\n".join(errors))
    if new:
        print(f"\nmypy: {sum(map(len, new.values()))} errors in {len(new)} modules that must "
              "type-check (fix them; ci/mypy_exemptions.txt may only shrink)")
    if clean:
        print("mypy: these exempted modules type-check now; remove them from "
              f"ci/mypy_exemptions.txt: {', '.join(clean)}")
    exempt_errors = sum(len(v) for k, v in by_file.items() if k in listed)
    print(f"mypy: {len(by_file) - len(new)} exempted modules with {exempt_errors} errors; "
          f"everything else in ray._private and plasma type-checks")
    return 1 if new or clean else 0


if __name__ == "__main__":
    sys.exit(main())
