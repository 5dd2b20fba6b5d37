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
    """A checkpoint directory (`path`). Only local filesystems are supported."""

    def __init__(self, path: str | os.PathLike, filesystem: Any = None):
        if filesystem is not None:
            raise TuneError(
                "Checkpoint(filesystem=...) is not supported: checkpoints live on the local "
                "filesystem (a shared mount works); pass only the path"
            )
        self.path = os.path.abspath(os.fspath(path))
        self.filesystem = None

    @classmethod
    def from_directory(cls, path: str | os.PathLike) -> Checkpoint:
        path = os.fspath(path)
        if not os.path.isdir(path):
            raise TuneError(f"Checkpoint.from_directory({path!r}): not a directory")
        return cls(path)

    @classmethod
    def from_dict(cls, data: dict) -> Checkpoint:
        """The Ray 2.0-2.6 dict checkpoint: `data` is pickled into a fresh directory."""
        path = tempfile.mkdtemp(prefix="tune_dict_checkpoint_")
        with open(os.path.join(path, _DICT_FILE), "wb") as f:
            pickle.dump(dict(data), f)
        return cls(path)

    def to_dict(self) -> dict:
        file = os.path.join(self.path, _DICT_FILE)
        if not os.path.exists(file):
            raise TuneError(f"{self!r} was not made by Checkpoint.from_dict(); read its files")
        with open(file, "rb") as f:
            return pickle.load(f)

    def to_directory(self, path: str | os.PathLike | None = None) -> str:
        """Copies the checkpoint into `path` (default: a new temporary directory)."""
        target = os.fspath(path) if path is not None else tempfile.mkdtemp(prefix="checkpoint_")
        if os.path.abspath(target) != self.path:
            shutil.copytree(self.path, target, dirs_exist_ok=True)
        return target

    @contextlib.contextmanager
    def as_directory(self) -> Iterator[str]:
        """The checkpoint as a local directory (no copy: it already is one)."""
        yield self.path

    def get_metadata(self) -> dict:
        file = os.path.join(self.path, _METADATA_FILE)
        if not os.path.exists(file):
            return {}
        with open(file) as f:
            return json.load(f)

    def set_metadata(self, metadata: dict) -> None:
        with open(os.path.join(self.path, _METADATA_FILE), "w") as f:
            json.dump(metadata, f)

    def update_metadata(self, metadata: dict) -> None:
        self.set_metadata({**self.get_metadata(), **metadata})

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Checkpoint) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)

    def __repr__(self) -> str:
        return f"Checkpoint(path={self.path!r})"


def copy_checkpoint_dir(source: str, target: str) -> None:
    """Replaces `target` with a copy of `source` (Tune's own metadata file left out)."""
    if os.path.abspath(source) == os.path.abspath(target):
        return
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".tune_metadata"))
