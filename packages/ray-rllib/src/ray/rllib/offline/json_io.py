"""Experience traces as JSON lines: ``JsonWriter`` (the ``output`` config) and ``JsonReader``.

Each line is one batch: ``{"type": "SampleBatch", column: values, ...}``, or
``{"type": "MultiAgentBatch", "count": N, "policy_batches": {...}}``. Columns named
in ``compress_columns`` are stored as base64 of zlib-compressed pickles (compact,
opaque); the others are plain JSON lists, readable by anything. Files are named
``output-<date>_worker-<index>_<n>.json`` and roll over at ``max_file_size`` bytes.
"""

from __future__ import annotations

import base64
import glob
import json
import os
import pickle
import time
import zlib

import numpy as np

from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch

_COMPRESSED = "__compressed__"


class OutputWriter:
    def write(self, sample_batch) -> None:
        raise NotImplementedError


class InputReader:
    def next(self):
        raise NotImplementedError


class JsonWriter(OutputWriter):
    def __init__(self, path: str, max_file_size: int = 64 * 1024 * 1024,
                 compress_columns=("obs", "new_obs"), worker_index: int = 0):
        self.path = os.path.abspath(os.path.expanduser(path))
        os.makedirs(self.path, exist_ok=True)
        self.max_file_size = max_file_size
        self.compress_columns = set(compress_columns)
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
    """Reads batches back from a directory, a glob, or a list of files (in order)."""

    def __init__(self, inputs):
        if isinstance(inputs, str):
            pattern = os.path.join(inputs, "*.json") if os.path.isdir(inputs) else inputs
            inputs = sorted(glob.glob(os.path.expanduser(pattern)))
        if not inputs:
            raise ValueError(f"no JSON experience files found in {inputs!r}")
        self.files = list(inputs)

    def read_all(self) -> list:
        batches = []
        for path in self.files:
            with open(path) as f:
                batches.extend(_decode_batch(json.loads(line)) for line in f if line.strip())
        return batches

    def next(self):
        if not hasattr(self, "_iter"):
            self._iter = iter(self.read_all())
        return next(self._iter)


def _encode_batch(batch, compress_columns) -> dict:
    if isinstance(batch, MultiAgentBatch):
        return {"type": "MultiAgentBatch", "count": batch.count, "policy_batches": {
            pid: _encode_batch(b, compress_columns) for pid, b in batch.policy_batches.items()}}
    out = {"type": "SampleBatch"}
    for key, column in batch.items():
        if key in compress_columns:
            packed = zlib.compress(pickle.dumps(column, protocol=pickle.HIGHEST_PROTOCOL))
            out[key] = {_COMPRESSED: base64.b64encode(packed).decode("ascii")}
        else:
            out[key] = _jsonable(column)
    return out


def _decode_batch(data: dict):
    if data["type"] == "MultiAgentBatch":
        return MultiAgentBatch(
            {pid: _decode_batch(b) for pid, b in data["policy_batches"].items()}, data["count"])
    columns = {}
    for key, value in data.items():
        if key == "type":
            continue
        if isinstance(value, dict) and _COMPRESSED in value:
            columns[key] = pickle.loads(zlib.decompress(base64.b64decode(value[_COMPRESSED])))
        else:
            columns[key] = np.asarray(value) if value and not isinstance(value[0], dict) \
                else value
    return SampleBatch(columns)


def _jsonable(column: np.ndarray) -> list:
    if column.dtype == object:
        return [v if isinstance(v, dict | str | int | float | type(None)) else repr(v)
                for v in column]
    return column.tolist()
