"""Pack local code into content-addressed zip packages, and unpack them on a node.

Packing is deterministic (entries sorted, fixed timestamps), so the same files give
the same bytes and the same URI, ``gcs://_ray_pkg_<sha1 of the bytes>.zip``: a driver
uploads a package once, and every node unpacks it once.

What is left out of a directory: ``__pycache__`` and ``.git`` folders, anything
matching a line of the directory's top-level ``.gitignore``, and anything matching
``runtime_env["excludes"]`` (gitignore syntax: ``*.bin``, ``data/``, ``/build``,
``**/tmp``, ``!keep.bin``; a later pattern wins). Symlinks are followed (a link to
a file ships the file's content) unless they are broken or lead back into a folder
already being packed (a cycle); those are skipped.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import re
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass

logger = logging.getLogger(__name__)

ALWAYS_SKIPPED = frozenset({"__pycache__", ".git"})
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)
_PREFIX = "_ray_pkg_"


class PackageTooLargeError(ValueError):
    """The files to upload exceed the size limit (a ValueError: bad user input)."""


# -- gitignore-style patterns -------------------------------------------------------------
@dataclass(frozen=True)
class _Rule:
    regex: re.Pattern
    negate: bool
    dir_only: bool


def _translate(glob: str) -> str:
    """One gitignore glob (no leading/trailing slash handling) as a regex body."""
    out, i, n = [], 0, len(glob)
    while i < n:
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("/**", i) and i + 3 == n:
            out.append("/.*")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = glob.find("]", i + 1)
            if end == -1:
                out.append(re.escape(c))
                i += 1
            else:
                body = glob[i + 1:end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end + 1
        elif c == "\\" and i + 1 < n:
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def compile_patterns(patterns) -> list[_Rule]:
    rules = []
    for raw in patterns:
        line = raw.rstrip("\n").rstrip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate:
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line  # a slash at the start or in the middle anchors to the root
        body = _translate(line.lstrip("/"))
        prefix = "" if anchored else "(?:.*/)?"
        rules.append(_Rule(re.compile(f"^{prefix}{body}$"), negate, dir_only))
    return rules


def is_excluded(rules: list[_Rule], rel_path: str, is_dir: bool) -> bool:
    """gitignore semantics for one path relative to the root (posix separators)."""
    excluded = False
    for rule in rules:
        if rule.dir_only and not is_dir:
            continue
        if rule.regex.match(rel_path):
            excluded = not rule.negate
    return excluded


# -- packing --------------------------------------------------------------------------------
def _files_to_pack(root: str, rules: list[_Rule]):
    """(relative posix path, absolute path) of every file to ship, sorted."""
    found = []
    seen_dirs = {os.path.realpath(root)}

    def walk(folder: str, rel: str):
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            logger.warning("runtime_env: cannot list %s (%s); skipped", folder, exc)
            return
        for entry in entries:
            rel_path = f"{rel}{entry.name}"
            try:
                is_dir = entry.is_dir()  # follows symlinks
                is_file = entry.is_file()
            except OSError:
                is_dir = is_file = False
            if not is_dir and not is_file:
                if entry.is_symlink():
                    logger.warning("runtime_env: skipping broken symlink %s", entry.path)
                continue
            if is_dir and entry.name in ALWAYS_SKIPPED:
                continue
            if is_excluded(rules, rel_path, is_dir):
                continue
            if is_dir:
                real = os.path.realpath(entry.path)
                if real in seen_dirs:
                    logger.warning("runtime_env: skipping symlink cycle %s -> %s",
                                   entry.path, real)
                    continue
                seen_dirs.add(real)
                walk(entry.path, rel_path + "/")
                seen_dirs.discard(real)
            else:
                found.append((rel_path, entry.path))

    walk(root, "")
    return found


def _too_large(what: str, total: int, limit: int, sizes) -> PackageTooLargeError:
    biggest = sorted(sizes, key=lambda item: -item[1])[:5]
    listing = ", ".join(f"{rel} ({size / 2**20:.1f} MiB)" for rel, size in biggest)
    return PackageTooLargeError(
        f"runtime_env: {what} holds {total / 2**20:.1f} MiB to upload, over the "
        f"{limit / 2**20:.0f} MiB limit. Largest files: {listing}. Leave them out with "
        "runtime_env['excludes'] (gitignore patterns, e.g. ['*.bin', 'data/']), or "
        "raise _system_config={'runtime_env_max_package_bytes': N}."
    )


def pack_directory(root: str, excludes=(), *, max_bytes: int, arc_prefix: str = "") -> bytes:
    """Zip ``root``'s files (under ``arc_prefix`` inside the archive)."""
    patterns = list(excludes)
    gitignore = os.path.join(root, ".gitignore")
    if os.path.isfile(gitignore):
        with open(gitignore, encoding="utf-8", errors="replace") as f:
            patterns = f.read().splitlines() + patterns  # excludes win over .gitignore
    files = _files_to_pack(root, compile_patterns(patterns))
    sizes, total = [], 0
    for rel, path in files:
        size = os.path.getsize(path)
        sizes.append((rel, size))
        total += size
        if total > max_bytes:
            raise _too_large(root, total, max_bytes, sizes)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        if arc_prefix:
            zf.writestr(_entry(arc_prefix + "/", 0o40755), b"")
        for rel, path in files:
            name = f"{arc_prefix}/{rel}" if arc_prefix else rel
            mode = os.stat(path).st_mode
            with open(path, "rb") as f:
                zf.writestr(_entry(name, stat.S_IFREG | (mode & 0o777)), f.read())
    return buf.getvalue()


def pack_file(path: str, *, max_bytes: int) -> bytes:
    """A single ``.py`` module zipped, or an existing archive as it is."""
    size = os.path.getsize(path)
    if size > max_bytes:
        raise _too_large(path, size, max_bytes, [(os.path.basename(path), size)])
    if path.endswith(".py"):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf, \
                open(path, "rb") as f:
            zf.writestr(_entry(os.path.basename(path), 0o100644), f.read())
        return buf.getvalue()
    with open(path, "rb") as f:
        data = f.read()
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise ValueError(f"runtime_env: {path} is not a valid zip archive.")
    if path.endswith(".whl"):
        _check_pure_wheel(path, data)
    return data


def _check_pure_wheel(path: str, data: bytes) -> None:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        meta = [n for n in zf.namelist() if n.endswith(".dist-info/WHEEL")]
        text = zf.read(meta[0]).decode(errors="replace") if meta else ""
    if "root-is-purelib: true" not in text.lower():
        raise ValueError(
            f"runtime_env['py_modules']: {os.path.basename(path)} is not a pure-Python wheel "
            "(Root-Is-Purelib is not true). Wheels are imported straight from the archive, "
            "not installed; install this one on every node instead."
        )


def _entry(name: str, mode: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
    info.external_attr = (mode & 0xFFFF) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def strip_single_folder(data: bytes) -> bytes:
    """A ``.zip`` working_dir holding one top-level folder runs inside that folder (as
    in Ray): repack it without that folder, so every package unpacks to its root."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        infos = [i for i in zf.infolist() if not i.filename.startswith("__MACOSX/")]
        tops = {i.filename.split("/", 1)[0] for i in infos}
        if len(tops) != 1 or not all("/" in i.filename for i in infos):
            return data
        prefix = tops.pop() + "/"
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as out:
            for info in sorted(infos, key=lambda i: i.filename):
                name = info.filename[len(prefix):]
                if name:
                    mode = (info.external_attr >> 16) or (0o40755 if info.is_dir() else 0o100644)
                    out.writestr(_entry(name, mode), b"" if info.is_dir() else zf.read(info))
        return buf.getvalue()


def package_uri(data: bytes, suffix: str = ".zip") -> str:
    return f"gcs://{_PREFIX}{hashlib.sha1(data).hexdigest()}{suffix}"


def local_name(uri: str) -> str:
    """The file or folder name a package gets on a node (``_ray_pkg_<sha1>[.whl]``; Ray 2.x
    clients upload ``_ray_pkg_<16 hex digits>.zip``, taken too)."""
    name = uri.split("://", 1)[-1]
    if not re.fullmatch(rf"{_PREFIX}[0-9a-f]{{16,64}}\.(zip|whl)", name):
        raise ValueError(f"not a runtime_env package URI: {uri!r}")
    return name[:-4] if name.endswith(".zip") else name


# -- unpacking (node side) ----------------------------------------------------------------
def install(uri: str, data: bytes, root: str) -> str:
    """Unpack (``.zip``) or store (``.whl``) a package under ``root`` once; its path.

    Atomic: extracted into a temporary folder next to the target, then renamed, so
    a concurrent or interrupted install never leaves a half-written package visible.
    """
    target = os.path.join(root, local_name(uri))
    if os.path.exists(target):
        return target
    os.makedirs(root, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".tmp-", dir=root)
    try:
        if uri.endswith(".whl"):
            staged = os.path.join(tmp, "pkg.whl")
            with open(staged, "wb") as f:
                f.write(data)
        else:
            staged = os.path.join(tmp, "pkg")
            _extract(data, staged)
        try:
            os.rename(staged, target)
        except OSError:
            if not os.path.exists(target):  # not a lost race: a real failure
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _extract(data: bytes, dest: str) -> None:
    os.makedirs(dest)
    real_dest = os.path.realpath(dest)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        for info in zf.infolist():
            out = os.path.realpath(os.path.join(dest, info.filename))
            if out != real_dest and not out.startswith(real_dest + os.sep):
                raise ValueError(f"runtime_env package entry {info.filename!r} escapes "
                                 "its folder; refusing to unpack it.")
            zf.extract(info, dest)
            mode = (info.external_attr >> 16) & 0o777
            if mode and not info.is_dir():
                os.chmod(out, mode)
