#!/usr/bin/env python3
"""Set, print or check the version of every package of this repository, together.

    ci/bump_version.py 0.7.1     # set it everywhere (the packages move together)
    ci/bump_version.py --check   # exit 1, naming each place, if any place disagrees
    ci/bump_version.py           # print the version

Each package has one version source, which its pyproject.toml reads
(``[tool.setuptools.dynamic] version = {attr = ...}``):

- ray-core: ``__version__`` in src/ray/__init__.py (it is ``ray.__version__``)
- every other package: ``__version__`` in its ``_version.py`` (``plasma/_version.py``,
  ``ray/tune/_version.py``, ...)

Pinned along with them: the sibling requirements (``ray-core==X`` in ray-tune's
dependencies, ...), which must name the exact version the siblings are released with,
and the image tags of the deployment files (``localhost/ray/deploy:X``: docker/build.sh
tags its images with the version).
"""

from __future__ import annotations

import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ["ray-plasma", "ray-core", "ray-tune", "ray-rllib", "ray-sgd", "ray-autoscaler"]
SOURCES = {
    "ray-plasma": "packages/ray-plasma/src/plasma/_version.py",
    "ray-core": "packages/ray-core/src/ray/__init__.py",
    "ray-tune": "packages/ray-tune/src/ray/tune/_version.py",
    "ray-rllib": "packages/ray-rllib/src/ray/rllib/_version.py",
    "ray-sgd": "packages/ray-sgd/src/ray/sgd/_version.py",
    "ray-autoscaler": "packages/ray-autoscaler/src/ray/autoscaler/_version.py",
}
IMAGE_FILES = [
    "docker/kubernetes/head.yaml",
    "docker/kubernetes/worker.yaml",
    "docker/kubernetes/submit.yaml",
    "packages/ray-autoscaler/src/ray/autoscaler/kubernetes/example-full.yaml",
]
# PEP 440 public versions of the forms releases use (1.2, 1.2.3, 1.2.3rc1, 1.2.3.post1, .dev2).
VERSION = re.compile(r"\d+(\.\d+)+((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?")
_SOURCE_LINE = re.compile(r'^__version__ = "([^"]*)"$', re.M)
_SIBLING_PIN = re.compile(r'"({})==([^";\s]*)'.format("|".join(map(re.escape, PACKAGES))))
_IMAGE_TAG = re.compile(r"(localhost/ray/[\w-]+):([\w.+-]+)")


class VersionError(Exception):
    """A version source is missing or malformed (a repository problem, not a user one)."""


def _read(rel: str) -> str:
    with open(os.path.join(ROOT, rel)) as f:
        return f.read()


def _write(rel: str, text: str) -> None:
    path = os.path.join(ROOT, rel)
    tmp = path + ".bump-tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def places() -> list[tuple[str, str]]:
    """Every (place, version) pair: sources, sibling pins and image tags."""
    found = []
    for dist, rel in SOURCES.items():
        hits = _SOURCE_LINE.findall(_read(rel))
        if len(hits) != 1:
            raise VersionError(f"{rel}: expected one line `__version__ = \"X\"` ({dist}'s version "
                               f"source), found {len(hits)}")
        found.append((f"{rel} (the {dist} version)", hits[0]))
    for dist in PACKAGES:
        rel = f"packages/{dist}/pyproject.toml"
        text = _read(rel)
        if re.search(r'^version\s*=\s*"', text, re.M):  # not `version = {attr = ...}`
            raise VersionError(f"{rel}: a static `version =` line is a second version source; "
                               f"the version comes from {SOURCES[dist]} (dynamic = [\"version\"])")
        for sibling, version in _SIBLING_PIN.findall(text):
            found.append((f"{rel} (requires {sibling}=={version})", version))
    for rel in IMAGE_FILES:
        for image, tag in _IMAGE_TAG.findall(_read(rel)):
            if tag != "dev":
                found.append((f"{rel} ({image}:{tag})", tag))
    return found


def current() -> str:
    """The version all places agree on; VersionError naming each disagreement otherwise."""
    found = places()
    core = next(v for p, v in found if p.startswith(SOURCES["ray-core"]))
    wrong = [f"  {p}: {v}" for p, v in found if v != core]
    if wrong:
        raise VersionError(f"versions disagree with ray-core's {core} "
                           f"(fix with: ci/bump_version.py {core}):\n" + "\n".join(wrong))
    return core


def bump(new: str) -> list[str]:
    """Set ``new`` everywhere; returns the files changed."""
    if not VERSION.fullmatch(new):
        raise ValueError(f"{new!r} is not a release version such as 0.7.1, 0.8.0rc1 or 0.8.0.dev0")
    places()  # every source is well formed before anything is written
    changed = []
    for rel in SOURCES.values():
        text = _read(rel)
        out = _SOURCE_LINE.sub(f'__version__ = "{new}"', text)
        if out != text:
            _write(rel, out)
            changed.append(rel)
    for dist in PACKAGES:
        rel = f"packages/{dist}/pyproject.toml"
        text = _read(rel)
        out = _SIBLING_PIN.sub(lambda m: f'"{m.group(1)}=={new}', text)
        if out != text:
            _write(rel, out)
            changed.append(rel)
    for rel in IMAGE_FILES:
        text = _read(rel)
        out = _IMAGE_TAG.sub(lambda m: m.group(0) if m.group(2) == "dev" else f"{m.group(1)}:{new}", text)
        if out != text:
            _write(rel, out)
            changed.append(rel)
    return changed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("version", nargs="?", help="the new version, e.g. 0.7.1")
    group.add_argument("--check", action="store_true", help="fail if any place disagrees")
    args = parser.parse_args(argv)
    try:
        if args.version:
            for rel in bump(args.version):
                print(f"updated {rel}")
            print(current())
        elif args.check:
            print(f"all packages at {current()}")
        else:
            print(current())
    except (VersionError, ValueError) as exc:
        print(f"bump_version: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
