"""Experience files: ``JsonWriter`` (the ``output`` config) and ``JsonReader`` (``input``).

One line per batch: ``{"type": "SampleBatch", column: values, ...}`` or
``{"type": "MultiAgentBatch", "count": N, "policy_batches": {pid: {...}}}``.
Columns listed in ``compress_columns`` (default ``obs`` and ``new_obs``) are
stored as ``{"__compressed__": base64(zlib(.npy bytes))}`` -- compact, and
read back without pickle; every other column is a plain JSON list that any
tool can read or write. Files are named
``output-<date>_worker-<index>_<n>.json`` and roll over at ``max_file_size``.

``JsonReader`` reads a directory, a glob, a file or a list of files; like
RLlib's, it picks files in random order, reads each one sequentially and
cycles forever (``read_all()`` returns every batch once, in file order).
"""

from __future__ import annotations

import abc
import base64
import glob
import io
import json
import logging
import os
import random
import time
import zlib

import numpy as np

from ray.rllib.policy.sample_batch import DEFAULT_POLICY_ID, MultiAgentBatch, SampleBatch

logger = logging.getLogger(__name__)

_COMPRESSED = "__compressed__"


class OutputWriter(abc.ABC):
    """Where experiences go (``output``): ``write(sample_batch)``."""

    @abc.abstractmethod
    def write(self, sample_batch) -> None:
        """Save one SampleBatch or MultiAgentBatch."""


class NoopOutput(OutputWriter):
    def write(self, sample_batch) -> None:
        return None


class InputReader(abc.ABC):
    """Where experiences come from (``input``): ``next()`` returns the next batch."""

    @abc.abstractmethod
    def next(self):
        """The next SampleBatch or MultiAgentBatch."""


class JsonWriter(OutputWriter):
    def __init__(self, path: str, ioctx=None, max_file_size: int = 64 * 1024 * 1024,
                 compress_columns=("obs", "new_obs"), worker_index: int | None = None):
        self.path = os.path.abspath(os.path.expanduser(path))
        os.makedirs(self.path, exist_ok=True)
        self.max_file_size = max_file_size
        self.compress_columns = set(compress_columns)
        if worker_index is None:
            worker_index = getattr(ioctx, "worker_index", 0) or 0
        self.worker_index = worker_index
        self.file_index = 0
        self.cur_file = None

    def write(self, sample_batch) -> None:
        line = json.dumps(_encode_batch(sample_batch, self.compress_columns))
        f = self._file()
        f.write(line + "\n")
        f.flush()

    def _file(self):
        if self.cur_file is not None and self.cur_file.tell() >= self.max_file_size:
            self.cur_file.close()
            self.cur_file = None
            self.file_index += 1
        if self.cur_file is None:
            stamp = time.strftime("%Y-%m-%d_%H-%M-%S")
            name = f"output-{stamp}_worker-{self.worker_index}_{self.file_index}.json"
            self.cur_file = open(os.path.join(self.path, name), "w")
        return self.cur_file

    def close(self) -> None:
        if self.cur_file is not None:
            self.cur_file.close()
            self.cur_file = None


class JsonReader(InputReader):
    """Batches from a directory, a glob (``/tmp/*.json``), a file, or a list of files."""

    def __init__(self, inputs, ioctx=None, seed: int | None = None):
        self.ioctx = ioctx
        self.files = _expand(inputs)
        self._rng = random.Random(seed)
        self._lines: list = []

    def read_all(self) -> list:
        batches = []
        for path in self.files:
            with open(path) as f:
                batches.extend(_decode_line(line, path) for line in f if line.strip())
        return batches

    def next(self):
        while not self._lines:
            path = self._rng.choice(self.files)
            with open(path) as f:
                self._lines = [(line, path) for line in f if line.strip()]
            if not self._lines:
                logger.warning("experience file %s is empty", path)
                if all(os.path.getsize(p) == 0 for p in self.files):
                    raise ValueError(f"every input file is empty: {self.files}")
            self._lines.reverse()  # pop() from the end reads the file in order
        batch = _decode_line(*self._lines.pop())
        return _single_agent_if_possible(batch)


def _expand(inputs) -> list:
    if isinstance(inputs, str):
        path = os.path.expanduser(inputs)
        if os.path.isdir(path):
            files = sorted(glob.glob(os.path.join(path, "*.json")))
        elif any(c in path for c in "*?["):
            files = sorted(glob.glob(path))
        else:
            files = [path] if os.path.isfile(path) else []
        if not files:
            raise ValueError(
                f"no experience files (*.json) found for input {inputs!r}: give a directory "
                "written by output=..., a glob like '/tmp/out/*.json', or a list of files"
            )
        return files
    files = [os.path.expanduser(p) for p in inputs]
    missing = [p for p in files if not os.path.isfile(p)]
    if not files or missing:
        raise ValueError(f"input files not found: {missing or inputs!r}")
    return files


def _single_agent_if_possible(batch):
    if isinstance(batch, MultiAgentBatch) and list(batch.policy_batches) == [DEFAULT_POLICY_ID]:
        return batch.policy_batches[DEFAULT_POLICY_ID]
    return batch


def _decode_line(line: str, path: str = "?"):
    try:
        return _decode_batch(json.loads(line))
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path}: not an RLlib experience line ({error}): {line[:120]!r}") \
            from error


def _encode_batch(batch, compress_columns) -> dict:
    if isinstance(batch, MultiAgentBatch):
        return {"type": "MultiAgentBatch", "count": batch.count, "policy_batches": {
            pid: _encode_batch(b, compress_columns) for pid, b in batch.policy_batches.items()}}
    out = {"type": "SampleBatch"}
    for key, column in batch.items():
        if key in compress_columns and column.dtype != object:
            out[key] = {_COMPRESSED: pack(column)}
        else:
            out[key] = _jsonable(column)
    return out


def _decode_batch(data: dict):
    if data.get("type") == "MultiAgentBatch":
        return MultiAgentBatch(
            {pid: _decode_batch(b) for pid, b in data["policy_batches"].items()}, data["count"])
    columns = {}
    for key, value in data.items():
        if key == "type":
            continue
        if isinstance(value, dict) and _COMPRESSED in value:
            columns[key] = unpack(value[_COMPRESSED])
        elif value and isinstance(value[0], dict | str | type(None)):
            column = np.empty(len(value), dtype=object)
            column[:] = value
            columns[key] = column
        else:
            columns[key] = np.asarray(value)
    return SampleBatch(columns)


def pack(array: np.ndarray) -> str:
    """base64 of the zlib-compressed ``.npy`` bytes of ``array``."""
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
    return base64.b64encode(zlib.compress(buffer.getvalue())).decode("ascii")


def unpack(data: str) -> np.ndarray:
    return np.load(io.BytesIO(zlib.decompress(base64.b64decode(data))), allow_pickle=False)


def _jsonable(column: np.ndarray) -> list:
    if column.dtype == object:
        return [_jsonable_value(v) for v in column]
    return column.tolist()


def _jsonable_value(value):
    if isinstance(value, dict):
        return {str(k): _jsonable_value(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list | tuple):
        return [_jsonable_value(v) for v in value]
    if isinstance(value, str | int | float | bool | type(None)):
        return value
    return repr(value)
