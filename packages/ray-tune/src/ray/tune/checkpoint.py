"""`ray.train.Checkpoint` (also `ray.tune.Checkpoint`): a directory of saved state.

A function trainable builds one from a directory it wrote and passes it to
`train.report(metrics, checkpoint=...)`; Tune copies that directory into the trial's
directory before `report` returns (so the caller may delete its temporary copy), and
hands it back through `train.get_checkpoint()` after a restore (PBT exploit, pause,
`Tuner.restore`) and through `Result.checkpoint`.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

from ray.tune.error import TuneError

_METADATA_FILE = ".metadata.json"
_DICT_FILE = "dict_checkpoint.pkl"


class Checkpoint:
    """A checkpoint directory (`path`), local or on a remote `filesystem` (pyarrow.fs)."""

    def __init__(self, path: str | os.PathLike, filesystem: Any = None):
        if filesystem is not None:
            try:
                import pyarrow.fs as pafs
            except ImportError as exc:
                raise TuneError("Checkpoint(filesystem=...) needs pyarrow: pip install pyarrow") from exc
            if not isinstance(filesystem, pafs.FileSystem):
                raise TuneError(
                    "Checkpoint(filesystem=...) must be a pyarrow.fs.FileSystem, got "
                    f"{type(filesystem).__name__}"
                )
            if isinstance(filesystem, pafs.LocalFileSystem):
                filesystem = None
        if filesystem is None:
            self.path = os.path.abspath(os.fspath(path))
        else:
            self.path = os.fspath(path).rstrip("/")
        self.filesystem = filesystem

    @classmethod
    def from_directory(cls, path: str | os.PathLike) -> Checkpoint:
        path = os.fspath(path)
        if not os.path.isdir(path):
            raise TuneError(f"Checkpoint.from_directory({path!r}): not a directory")
        return cls(path)

    def _download(self, target: str) -> None:
        """Copies a remote checkpoint's files into the local directory `target`."""
        import pyarrow.fs as pafs

        infos = self.filesystem.get_file_info(pafs.FileSelector(self.path, recursive=True))
        for info in infos:
            if info.type != pafs.FileType.File:
                continue
            rel = info.path[len(self.path):].lstrip("/")
            local = os.path.join(target, *rel.split("/"))
            os.makedirs(os.path.dirname(local), exist_ok=True)
            with self.filesystem.open_input_stream(info.path) as src, open(local, "wb") as dst:
                shutil.copyfileobj(src, dst)

    @classmethod
    def from_dict(cls, data: dict) -> Checkpoint:
        """The Ray 2.0-2.6 dict checkpoint: `data` is pickled into a fresh directory."""
        path = tempfile.mkdtemp(prefix="tune_dict_checkpoint_")
        with open(os.path.join(path, _DICT_FILE), "wb") as f:
            pickle.dump(dict(data), f)
        return cls(path)

    def to_dict(self) -> dict:
        if self.filesystem is not None:
            with self.as_directory() as local:
                return Checkpoint(local).to_dict()
        file = os.path.join(self.path, _DICT_FILE)
        if not os.path.exists(file):
            raise TuneError(f"{self!r} was not made by Checkpoint.from_dict(); read its files")
        with open(file, "rb") as f:
            return pickle.load(f)

    def to_directory(self, path: str | os.PathLike | None = None) -> str:
        """Copies the checkpoint into `path` (default: a new temporary directory)."""
        target = os.fspath(path) if path is not None else tempfile.mkdtemp(prefix="checkpoint_")
        if self.filesystem is not None:
            os.makedirs(target, exist_ok=True)
            self._download(target)
        elif os.path.abspath(target) != self.path:
            shutil.copytree(self.path, target, dirs_exist_ok=True)
        return target

    @contextlib.contextmanager
    def as_directory(self) -> Iterator[str]:
        """The checkpoint as a local directory: itself when local, else a temporary copy
        (deleted when the block exits)."""
        if self.filesystem is None:
            yield self.path
            return
        local = self.to_directory()
        try:
            yield local
        finally:
            shutil.rmtree(local, ignore_errors=True)

    def get_metadata(self) -> dict:
        if self.filesystem is not None:
            try:
                with self.filesystem.open_input_stream(f"{self.path}/{_METADATA_FILE}") as f:
                    return json.loads(f.read().decode())
            except (FileNotFoundError, OSError):
                return {}
        file = os.path.join(self.path, _METADATA_FILE)
        if not os.path.exists(file):
            return {}
        with open(file) as f:
            return json.load(f)

    def set_metadata(self, metadata: dict) -> None:
        if self.filesystem is not None:
            with self.filesystem.open_output_stream(f"{self.path}/{_METADATA_FILE}") as f:
                f.write(json.dumps(metadata).encode())
            return
        with open(os.path.join(self.path, _METADATA_FILE), "w") as f:
            json.dump(metadata, f)

    def update_metadata(self, metadata: dict) -> None:
        self.set_metadata({**self.get_metadata(), **metadata})

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Checkpoint) and other.path == self.path
                and type(other.filesystem) is type(self.filesystem))

    def __hash__(self) -> int:
        return hash(self.path)

    def __repr__(self) -> str:
        if self.filesystem is not None:
            return f"Checkpoint(filesystem={self.filesystem.type_name}, path={self.path!r})"
        return f"Checkpoint(path={self.path!r})"


def copy_checkpoint_dir(source: str, target: str) -> None:
    """Replaces `target` with a copy of `source` (Tune's own metadata file left out)."""
    if os.path.abspath(source) == os.path.abspath(target):
        return
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".tune_metadata"))
