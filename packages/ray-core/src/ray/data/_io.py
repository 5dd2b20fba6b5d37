"""Files in and out of ``ray.data``: datasources (one read task per file) and the
write transform (one file per block).

Formats: ``parquet`` (pyarrow; column selection and row filters are pushed into the
read, see ``ParquetDatasource``), ``csv`` (pyarrow's reader, or pandas' when given
pandas keywords), ``json`` (JSON lines; a file holding one JSON array of objects is
read too), ``text`` (a row per line) and ``numpy`` (``.npy``, one row per first-axis
entry). Paths are local (``local://`` and ``file://`` accepted) and must be readable
at the same path on every node.

Pure, no ray: read and write tasks run these on workers.
"""

from __future__ import annotations

import csv
import dataclasses
import glob
import json
import os

import numpy as np

from ray.data import _blocks
from ray.data._plan import Datasource, ReadTask
from ray.data._transforms import TASK_INDEX

READ_FORMATS = ("csv", "json", "text", "numpy", "parquet")
_ARROW_CSV_OPTIONS = ("read_options", "parse_options", "convert_options")


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


# -- datasources ----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class FileDatasource(Datasource):
    """One block per file, read by ``read_file``."""

    files: tuple[str, ...]
    fmt: str
    options: dict
    include_paths: bool = False

    @property
    def name(self) -> str:
        return {"csv": "ReadCSV", "json": "ReadJSON", "text": "ReadText", "numpy": "ReadNumpy",
                "parquet": "ReadParquet"}[self.fmt]

    def read_tasks(self) -> list[ReadTask]:
        return [ReadTask(_FileRead(path, self.fmt, self.options, self.include_paths), (path,)) for path in self.files]


@dataclasses.dataclass(frozen=True)
class _FileRead:
    path: str
    fmt: str
    options: dict
    include_paths: bool

    def __call__(self):
        block = read_file(self.path, self.fmt, self.options)
        if self.include_paths:
            paths = {"path": [self.path] * _blocks.num_rows(block)}
            columns = {**{c: _blocks.column_array(block, c) for c in _blocks.column_names(block)}, **paths}
            block = _blocks.build_block_from_columns(columns, _blocks.num_rows(block))
        return block


@dataclasses.dataclass(frozen=True)
class ParquetDatasource(FileDatasource):
    """Parquet files: ``columns`` and ``filter`` (a ``pyarrow.compute.Expression``)
    go to ``pyarrow.parquet.read_table``, so unread columns are never decoded and row
    groups whose statistics rule the filter out are skipped. ``select_columns`` and
    ``filter(expr=...)`` right after the read land here (``_plan.optimize``)."""

    def with_columns(self, columns: list) -> ParquetDatasource | None:
        current = self.options.get("columns")
        if current is not None and not set(columns) <= set(current):
            return None  # the select names a column the read already dropped: let it fail there
        if self.include_paths and "path" in columns:
            return None
        return dataclasses.replace(self, options={**self.options, "columns": list(columns)})

    def with_filter(self, expression) -> ParquetDatasource | None:
        current = self.options.get("filter")
        combined = expression if current is None else current & expression
        return dataclasses.replace(self, options={**self.options, "filter": combined})


@dataclasses.dataclass(frozen=True)
class RangeDatasource(Datasource):
    """``ray.data.range(n)``: blocks of consecutive ``id``s made by tasks."""

    n: int
    parts: int
    name = "ReadRange"

    def read_tasks(self) -> list[ReadTask]:
        bounds = [(self.n * i // self.parts, self.n * (i + 1) // self.parts) for i in range(self.parts)]
        return [ReadTask(_RangeRead(lo, hi), (), hi - lo) for lo, hi in bounds]

    def num_rows(self) -> int:
        return self.n

    def schema(self):
        pa = _blocks.pyarrow_or_none()
        return _blocks.Schema(("id",), (pa.int64() if pa is not None else "int64",))


@dataclasses.dataclass(frozen=True)
class _RangeRead:
    lo: int
    hi: int

    def __call__(self):
        return _blocks.block_from_batch({"id": np.arange(self.lo, self.hi, dtype=np.int64)})


# -- reading one file -----------------------------------------------------------------


def read_file(path: str, fmt: str, options: dict):
    """The block in file ``path``."""
    if fmt == "csv":
        return _read_csv(path, options)
    if fmt == "json":
        return _blocks.build_block(_json_rows(path))
    if fmt == "text":
        with open(path, encoding=options.get("encoding", "utf-8")) as f:
            lines = f.read().splitlines()
        if options.get("drop_empty_lines"):
            lines = [line for line in lines if line.strip()]
        return _blocks.build_block_from_columns({"text": lines}, len(lines))
    if fmt == "numpy":
        return _blocks.block_from_batch({"data": np.load(path, **{"allow_pickle": False, **options})})
    if fmt == "parquet":
        pq = _parquet("ray.data.read_parquet")
        extra = {k: v for k, v in options.items() if k not in ("columns", "filter")}
        table = pq.read_table(path, columns=options.get("columns"), filters=options.get("filter"), **extra)
        table = table.replace_schema_metadata(None)
        return table if _blocks.default_format() == _blocks.ARROW else _blocks.to_pandas_block(table)
    raise ValueError(f"unknown file format {fmt!r}; one of {READ_FORMATS}")


def _read_csv(path: str, options: dict):
    arrow_only = set(options) <= set(_ARROW_CSV_OPTIONS)
    if _blocks.pyarrow_or_none() is not None and arrow_only:
        from pyarrow import csv as pacsv

        return pacsv.read_csv(path, **options)
    if not arrow_only and set(options) & set(_ARROW_CSV_OPTIONS):
        raise ValueError(
            f"read_csv got both pyarrow.csv options {sorted(set(options) & set(_ARROW_CSV_OPTIONS))} and "
            f"pandas.read_csv keywords {sorted(set(options) - set(_ARROW_CSV_OPTIONS))}: use one kind"
        )
    frame = _blocks.require_pandas("ray.data.read_csv with pandas keywords").read_csv(path, **options)
    if _blocks.pyarrow_or_none() is None:
        return frame
    try:
        return _blocks.accessor(frame).to_arrow()
    except _blocks.NotArrowable:
        return frame


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


# -- writing ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class WriteBlocks:
    """The transform of a write: block k goes to ``<directory>/<prefix>_<k>.<suffix>``
    (an empty block only when it is the first, so a schema survives); the task's
    output is one row naming the file."""

    directory: str
    prefix: str
    fmt: str
    suffix: str
    options: dict

    def __call__(self, block):
        index = TASK_INDEX.get()
        rows = _blocks.num_rows(block)
        if not rows and index:
            return []
        path = os.path.join(self.directory, f"{self.prefix}_{index:06d}.{self.suffix}")
        write_file(block, path, self.fmt, self.options)
        return [{"path": path, "num_rows": rows}]


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
        pq.write_table(_blocks.to_arrow_block(block), path, **options)
    else:
        raise ValueError(f"unknown file format {fmt!r}")


def _write_csv(block, path: str, options: dict) -> None:
    if _blocks.pandas_or_none() is not None:
        _blocks.to_pandas_block(block).to_csv(path, index=False, **options)
        return
    if options:
        _blocks.require_pandas(f"write_csv options {sorted(options)}")
    rows = list(_blocks.iter_rows(block))
    names = _blocks.column_names(block)
    with open(path, "w", newline="") as f:  # no pandas here: the csv module writes the rows
        writer = csv.DictWriter(f, fieldnames=names)
        writer.writeheader()
        writer.writerows(rows)


def _write_json(block, path: str, options: dict) -> None:
    if _blocks.pandas_or_none() is not None:
        frame = _blocks.to_pandas_block(block)
        if len(frame):
            frame.to_json(path, **{"orient": "records", "lines": True, **options})
        else:
            open(path, "w").close()
        return
    if options:
        _blocks.require_pandas(f"write_json options {sorted(options)}")
    with open(path, "w", encoding="utf-8") as f:
        for row in _blocks.iter_rows(block):
            f.write(json.dumps(row, default=_json_default) + "\n")


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"write_json cannot write a {type(value).__name__} ({value!r:.60}) as JSON")
