"""Where an experiment is stored: `RunConfig(storage_path=...)`, a local path or a URI.

A local path (or a shared mount) is the experiment directory itself. A URI (`s3://`,
`gs://`, `memory://`, any scheme `pyarrow.fs` or `fsspec` knows, or a path on an explicit
`storage_filesystem`) is a remote copy: the driver writes the experiment into a local
staging directory (`~/ray_results/<name>`, or `TUNE_RESULT_DIR`) and `sync_up()` copies
what changed there — trial results, checkpoints, then the experiment state last — to
the remote path. Because the state file goes up after the files it names, the remote
copy is always restorable: `Tuner.restore(uri)` downloads it (`sync_down()`) and
continues from each trial's last uploaded checkpoint. Files deleted locally (checkpoints
beyond `num_to_keep`) are deleted remotely after the state that no longer names them.

S3 endpoints other than AWS (MinIO, moto) go in the URI as pyarrow reads it:
`s3://bucket/path?endpoint_override=http://127.0.0.1:5000&scheme=http`, or pass
`storage_filesystem=pyarrow.fs.S3FileSystem(...)`.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import time
from typing import Any

from ray.tune.error import TuneError

logger = logging.getLogger(__name__)

_STATE_PATTERNS = ("experiment_state-*.json", "tuner.pkl")


def is_uri(path: str | None) -> bool:
    return bool(path) and "://" in str(path)


def resolve_filesystem(storage_path: str, storage_filesystem: Any = None) -> tuple[Any, str]:
    """(pyarrow FileSystem, path on it) for a URI or an explicit filesystem."""
    try:
        import pyarrow.fs as pafs
    except ImportError as exc:
        raise TuneError(
            f"storage_path={storage_path!r} needs pyarrow for remote storage: pip install pyarrow "
            "(or use a local path)"
        ) from exc
    if storage_filesystem is not None:
        if not isinstance(storage_filesystem, pafs.FileSystem):
            try:
                import fsspec
            except ImportError:
                fsspec = None
            if fsspec is not None and isinstance(storage_filesystem, fsspec.AbstractFileSystem):
                storage_filesystem = pafs.PyFileSystem(pafs.FSSpecHandler(storage_filesystem))
            else:
                raise TuneError(
                    "storage_filesystem must be a pyarrow.fs.FileSystem or an fsspec "
                    f"filesystem, got {type(storage_filesystem).__name__}"
                )
        path = storage_path.split("://", 1)[1] if is_uri(storage_path) else storage_path
        return storage_filesystem, path.rstrip("/")
    try:
        fs, path = pafs.FileSystem.from_uri(storage_path)
        return fs, path.rstrip("/")
    except Exception as arrow_error:  # noqa: BLE001 - pyarrow does not know the scheme: try fsspec
        try:
            import fsspec.core
        except ImportError:
            raise TuneError(
                f"cannot open storage_path={storage_path!r}: {arrow_error}; install fsspec (and "
                "the package for this scheme) or pass storage_filesystem="
            ) from arrow_error
        try:
            fs, path = fsspec.core.url_to_fs(storage_path)
        except Exception as exc:  # noqa: BLE001 - re-raised with both causes
            raise TuneError(
                f"cannot open storage_path={storage_path!r}: pyarrow says {arrow_error}; fsspec "
                f"says {exc}"
            ) from exc
        return pafs.PyFileSystem(pafs.FSSpecHandler(fs)), path.rstrip("/")


def _join(*parts: str) -> str:
    return "/".join(p.strip("/") if i else p.rstrip("/") for i, p in enumerate(parts) if p)


def uri_join(uri: str, name: str) -> str:
    """`name` appended to a URI's path (before its query string, if any)."""
    base, sep, query = uri.partition("?")
    return _join(base, name) + (sep + query if sep else "")


def uri_split(uri: str) -> tuple[str, str]:
    """(parent URI, last path component): the inverse of `uri_join`."""
    base, sep, query = uri.partition("?")
    parent, _, name = base.rstrip("/").rpartition("/")
    if not name or parent.endswith(":/"):
        raise TuneError(f"{uri!r} names no experiment directory (expected scheme://root/.../name)")
    return parent + (sep + query if sep else ""), name


class ExperimentStorage:
    """A local experiment directory and, when `storage_path` is remote, its remote copy."""

    def __init__(self, local_dir: str, fs: Any = None, remote_dir: str | None = None,
                 uri: str | None = None):
        self.local_dir = local_dir
        self.fs = fs
        self.remote_dir = remote_dir
        self.uri = uri
        self._uploaded: dict[str, tuple[int, int]] = {}  # relpath -> (size, mtime_ns)

    @property
    def is_remote(self) -> bool:
        return self.fs is not None

    @classmethod
    def create(cls, storage_path: str | None, name: str, *, storage_filesystem: Any = None,
               staging_root: str | None = None) -> ExperimentStorage:
        default_root = os.environ.get("TUNE_RESULT_DIR") or "~/ray_results"
        if storage_filesystem is None and not is_uri(storage_path):
            root = os.path.abspath(os.path.expanduser(storage_path or default_root))
            return cls(os.path.join(root, name))
        fs, path = resolve_filesystem(str(storage_path), storage_filesystem)
        staging = os.path.abspath(os.path.expanduser(staging_root or default_root))
        return cls(os.path.join(staging, name), fs, _join(path, name),
                   uri=uri_join(str(storage_path), name) if is_uri(storage_path) else None)

    def remote_path_of(self, local_path: str) -> str:
        """The remote path of a file or directory inside the local experiment directory."""
        rel = os.path.relpath(local_path, self.local_dir)
        if rel.startswith(".."):
            raise TuneError(f"{local_path} is not inside the experiment directory {self.local_dir}")
        return self.remote_dir if rel == "." else _join(self.remote_dir, rel.replace(os.sep, "/"))

    # -- up ----------------------------------------------------------------------
    def sync_up(self) -> int:
        """Uploads what changed since the last call (state files last); returns the count."""
        if not self.is_remote or not os.path.isdir(self.local_dir):
            return 0
        current = self._scan()
        changed = [rel for rel, sig in current.items() if self._uploaded.get(rel) != sig]
        state = [rel for rel in changed if _is_state(rel)]
        for rel in [r for r in changed if not _is_state(r)] + state:
            self._upload(rel)
            self._uploaded[rel] = current[rel]
        for rel in [r for r in self._uploaded if r not in current]:
            try:
                self.fs.delete_file(_join(self.remote_dir, rel))
            except (FileNotFoundError, OSError):
                pass  # already gone remotely
            del self._uploaded[rel]
        return len(changed)

    def _scan(self) -> dict[str, tuple[int, int]]:
        out = {}
        for root, dirs, files in os.walk(self.local_dir):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for name in files:
                if name.startswith(".experiment_state_") or name.endswith(".tmp"):
                    continue  # a state file being written
                path = os.path.join(root, name)
                try:
                    st = os.stat(path)
                except FileNotFoundError:
                    continue
                out[os.path.relpath(path, self.local_dir).replace(os.sep, "/")] = (
                    st.st_size, st.st_mtime_ns)
        return out

    def _upload(self, rel: str) -> None:
        target = _join(self.remote_dir, rel)
        parent = target.rsplit("/", 1)[0]
        self.fs.create_dir(parent, recursive=True)
        with open(os.path.join(self.local_dir, rel), "rb") as src, \
                self.fs.open_output_stream(target) as dst:
            while True:
                chunk = src.read(1 << 22)
                if not chunk:
                    break
                dst.write(chunk)

    # -- down ----------------------------------------------------------------------
    def exists_remotely(self) -> bool:
        import pyarrow.fs as pafs

        info = self.fs.get_file_info(self.remote_dir)
        return info.type == pafs.FileType.Directory or bool(self._remote_files())

    def _remote_files(self) -> list[str]:
        import pyarrow.fs as pafs

        try:
            infos = self.fs.get_file_info(pafs.FileSelector(self.remote_dir, recursive=True))
        except (FileNotFoundError, OSError):
            return []
        prefix = self.remote_dir.rstrip("/") + "/"
        return [i.path[len(prefix):] if i.path.startswith(prefix) else i.path
                for i in infos if i.type == pafs.FileType.File]

    def sync_down(self, only_state: bool = False) -> int:
        """Downloads the remote experiment into the local directory; returns the file count."""
        files = self._remote_files()
        if only_state:
            files = [f for f in files if _is_state(f)]
        for rel in files:
            target = os.path.join(self.local_dir, *rel.split("/"))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with self.fs.open_input_stream(_join(self.remote_dir, rel)) as src, \
                    open(target, "wb") as dst:
                while True:
                    chunk = src.read(1 << 22)
                    if not chunk:
                        break
                    dst.write(chunk)
        if not only_state:
            self._uploaded = self._scan()  # what is there now is what is up there
        return len(files)


def _is_state(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return "/" not in rel and any(fnmatch.fnmatch(name, p) for p in _STATE_PATTERNS)


class PeriodicSync:
    """Calls `storage.sync_up()` at most every `period_s` (and always when forced)."""

    def __init__(self, storage: ExperimentStorage, period_s: float):
        self.storage = storage
        self.period_s = period_s
        self._last = -float("inf")

    def maybe_sync(self, force: bool = False, raise_errors: bool = False) -> None:
        if not self.storage.is_remote:
            return
        now = time.monotonic()
        if not force and now - self._last < self.period_s:
            return
        self._last = now
        try:
            self.storage.sync_up()
        except Exception as exc:  # noqa: BLE001 - a failed upload is retried at the next sync
            if raise_errors:
                raise TuneError(
                    f"could not upload the experiment to {self.storage.uri or self.storage.remote_dir}: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            logger.warning("upload of the experiment to %s failed (retried later): %s",
                           self.storage.uri or self.storage.remote_dir, exc)
