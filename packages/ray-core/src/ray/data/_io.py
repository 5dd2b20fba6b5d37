"""Files in and out of ``ray.data``: one task reads or writes one file (one block).

Formats: ``csv`` (pandas), ``json`` (JSON lines; a file holding one JSON array of
objects is read too), ``text`` (a row per line), ``numpy`` (``.npy``, one row per
first-axis entry) and ``parquet`` (pyarrow, optional: ``pip install pyarrow``).
Paths are local (``local://`` and ``file://`` accepted) and must be readable at the
same path on every node.
"""

from __future__ import annotations

import csv
import glob
import json
import os

import numpy as np

import ray
from ray.data import _blocks

READ_FORMATS = ("csv", "json", "text", "numpy", "parquet")


def local_path(path: str) -> str:
    for scheme in ("local://", "file://"):
        if path.startswith(scheme):
            return path[len(scheme):]
    if "://" in path:
        raise ValueError(f"only local paths are supported (or local:// and file://), got {path!r}")
    return path


def list_files(paths, what: str) -> list[str]:
    """Every file named by ``paths`` (a path or list; a directory means every file
    under it, skipping names starting with ``.`` or ``_``), absolute and sorted."""
    files = []
    for path in [paths] if isinstance(paths, (str, os.PathLike)) else list(paths):
        local = local_path(os.fspath(path))
        if os.path.isdir(local):
            files.extend(sorted(
                p for p in glob.glob(os.path.join(local, "**", "*"), recursive=True)
                if os.path.isfile(p) and not os.path.basename(p).startswith((".", "_"))
            ))
        elif os.path.isfile(local):
            files.append(local)
        else:
            raise FileNotFoundError(f"{what}: no file or directory {local!r}")
    if not files:
        raise FileNotFoundError(f"{what}: no files under {paths!r}")
    return [os.path.abspath(f) for f in files]


# -- reading one file -----------------------------------------------------------------


def read_file(path: str, fmt: str, options: dict):
    """The block in file ``path``."""
    if fmt == "csv":
        return _blocks.require_pandas("ray.data.read_csv").read_csv(path, **options)
    if fmt == "json":
        return _blocks.build_block(_json_rows(path))
    if fmt == "text":
        with open(path, encoding=options.get("encoding", "utf-8")) as f:
            lines = f.read().splitlines()
        if options.get("drop_empty_lines"):
            lines = [line for line in lines if line.strip()]
        return _blocks.build_block([{"text": line} for line in lines])
    if fmt == "numpy":
        return _blocks.block_from_batch({"data": np.load(path, **{"allow_pickle": False, **options})})
    if fmt == "parquet":
        pq = _parquet("ray.data.read_parquet")
        table = pq.read_table(path, columns=options.get("columns"))
        return table.to_pandas() if _blocks.pandas_or_none() else table.to_pylist()
    raise ValueError(f"unknown file format {fmt!r}; one of {READ_FORMATS}")


def _parquet(what: str):
    _blocks.require_pyarrow(what)
    import pyarrow.parquet as pq

    return pq


def _json_rows(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if text.lstrip().startswith("["):
        rows, where = json.loads(text), "the array"
    else:
        rows, where = [], "line"
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise ValueError(
                        f"read_json: {path} line {number} is not JSON ({e.msg}); read_json reads "
                        "JSON lines (one object per line) or one JSON array of objects"
                    ) from None
    for row in rows:
        if not isinstance(row, dict):
            raise ValueError(
                f"read_json: {path} holds a {type(row).__name__} in {where}, not an object; "
                "every row must be a JSON object ({\"column\": value, ...})"
            )
    return rows


# -- writing one file -----------------------------------------------------------------


def write_file(block, path: str, fmt: str, options: dict) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if fmt == "csv":
        _write_csv(block, path, options)
    elif fmt == "json":
        _write_json(block, path, options)
    elif fmt == "numpy":
        np.save(path, _blocks.to_numpy_dict(block)[options["column"]] if _blocks.num_rows(block)
                else np.empty(0))
    elif fmt == "parquet":
        pq = _parquet("Dataset.write_parquet")
        pq.write_table(_blocks.to_batch(block, "pyarrow"), path, **options)
    else:
        raise ValueError(f"unknown file format {fmt!r}")


def _write_csv(block, path: str, options: dict) -> None:
    if _blocks.is_pandas(block):
        block.to_csv(path, index=False, **options)
        return
    if options:
        _blocks.require_pandas(f"write_csv options {sorted(options)}")
    names = _blocks.schema_of(block).names if block else ()
    with open(path, "w", newline="") as f:  # no pandas here: the csv module writes the rows
        writer = csv.DictWriter(f, fieldnames=names)
        writer.writeheader()
        writer.writerows(block)


def _write_json(block, path: str, options: dict) -> None:
    if _blocks.is_pandas(block):
        if len(block):
            block.to_json(path, **{"orient": "records", "lines": True, **options})
        else:
            open(path, "w").close()
        return
    if options:
        _blocks.require_pandas(f"write_json options {sorted(options)}")
    with open(path, "w", encoding="utf-8") as f:
        for row in block:
            f.write(json.dumps(row, default=_json_default) + "\n")


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"write_json cannot write a {type(value).__name__} ({value!r:.60}) as JSON")


# -- the tasks ------------------------------------------------------------------------


@ray.remote(num_returns=2)
def read_file_task(path: str, fmt: str, include_paths: bool, options: dict):
    out = read_file(path, fmt, options)
    if include_paths:
        out = out.assign(path=path) if _blocks.is_pandas(out) else [{**row, "path": path} for row in out]
    return out, _blocks.metadata_of(out)


@ray.remote
def write_file_task(block, path: str, fmt: str, options: dict) -> str:
    write_file(block, path, fmt, options)
    return path
