"""Making Datasets: from driver memory (``from_items``/``from_pandas``/``from_numpy``/
``from_arrow``), from ObjectRefs already in the store (``from_pandas_refs``/
``from_arrow_refs``/``from_numpy_refs``, what Modin hands over), and lazily from
tasks (``range``) and files (``read_parquet``, ``read_csv``, ``read_json``,
``read_text``, ``read_numpy``; one read task per file, see ``_io``)."""

from __future__ import annotations

import builtins

import numpy as np

import ray
from ray.data import _blocks, _io, _plan, _tasks
from ray.data.dataset import Dataset, MaterializedDataset, from_blocks


def _num_blocks(num_items: int, parallelism: int, override_num_blocks: int | None) -> int:
    """``override_num_blocks`` (or the old ``parallelism``), else two blocks per cluster
    CPU; never more blocks than items, never fewer than one."""
    wanted = override_num_blocks if override_num_blocks is not None else parallelism
    if wanted is None or wanted == -1:
        wanted = 2 * max(int(ray.cluster_resources().get("CPU", 1)), 1)
    if not isinstance(wanted, int) or wanted < 1:
        raise ValueError(f"override_num_blocks must be a positive int, got {wanted!r}")
    return max(min(wanted, num_items), 1)


def _bounds(total: int, parts: int) -> list[tuple[int, int]]:
    return [(total * i // parts, total * (i + 1) // parts) for i in builtins.range(parts)]


def range(n: int, *, parallelism: int = -1, override_num_blocks: int | None = None) -> Dataset:  # noqa: A001
    """Rows ``{"id": 0}`` .. ``{"id": n - 1}``, each block made by a read task."""
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"ray.data.range needs a non-negative int, got {n!r}")
    parts = _num_blocks(int(n), parallelism, override_num_blocks)
    return Dataset(_plan.Read(_io.RangeDatasource(int(n), parts)))


def from_items(items: list, *, parallelism: int = -1, override_num_blocks: int | None = None) -> MaterializedDataset:
    """A Dataset of ``items``: dicts become rows, anything else becomes ``{"item": x}``."""
    if not isinstance(items, (list, tuple)):
        raise TypeError(f"from_items needs a list, got {type(items).__name__}")
    rows = [item if isinstance(item, dict) else {"item": item} for item in items]
    parts = _num_blocks(len(rows), parallelism, override_num_blocks)
    return from_blocks([_blocks.build_block(rows[lo:hi]) for lo, hi in _bounds(len(rows), parts)], "FromItems")


def _as_list(value, kind, what: str) -> list:
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    for v in values:
        if not isinstance(v, kind):
            raise TypeError(f"{what}, got {type(v).__name__}")
    return values


def _repartitioned(ds: Dataset, override_num_blocks: int | None) -> Dataset:
    return ds.repartition(override_num_blocks).materialize() if override_num_blocks else ds


def from_pandas(dfs, override_num_blocks: int | None = None) -> MaterializedDataset:
    """One block per DataFrame (``dfs``: a DataFrame or a list of them), kept as pandas."""
    pd = _blocks.require_pandas("ray.data.from_pandas")
    frames = _as_list(dfs, pd.DataFrame, "from_pandas takes a pandas.DataFrame or a list of them")
    ds = from_blocks(frames, "FromPandas") if frames else _empty()
    return _repartitioned(ds, override_num_blocks)


def _from_refs(refs: list, label: str) -> MaterializedDataset:
    return MaterializedDataset(_plan.InputData(
        tuple(refs), tuple(_tasks.block_metadata.remote(ref) for ref in refs), label
    ))


def from_pandas_refs(dfs) -> MaterializedDataset:
    """One block per ObjectRef of a pandas DataFrame (how Modin hands its partitions
    over: ``modin.pandas.io.to_ray``). The DataFrames are not copied; their row counts
    and schemas are read by tasks."""
    refs = _as_list(dfs, ray.ObjectRef, "from_pandas_refs takes an ObjectRef of a pandas.DataFrame or a list of them")
    return _from_refs(refs, "FromPandas")


def from_arrow(tables, *, override_num_blocks: int | None = None) -> MaterializedDataset:
    """One block per ``pyarrow.Table`` (stored zero-copy: its buffers go into the
    object store as they are)."""
    pa = _blocks.require_pyarrow("ray.data.from_arrow")
    tables = _as_list(tables, pa.Table, "from_arrow takes a pyarrow.Table or a list of them")
    ds = from_blocks([t.replace_schema_metadata(None) for t in tables], "FromArrow") if tables else _empty()
    return _repartitioned(ds, override_num_blocks)


def from_arrow_refs(tables) -> MaterializedDataset:
    """One block per ObjectRef of a ``pyarrow.Table`` (not copied; row counts and
    schemas are read by tasks)."""
    _blocks.require_pyarrow("ray.data.from_arrow_refs")
    refs = _as_list(tables, ray.ObjectRef, "from_arrow_refs takes an ObjectRef of a pyarrow.Table or a list of them")
    return _from_refs(refs, "FromArrow")


def from_numpy(ndarrays) -> MaterializedDataset:
    """One block per array, in a column named ``data`` (one row per first-axis entry)."""
    arrays = _as_list(ndarrays, np.ndarray, "from_numpy takes a numpy.ndarray or a list of them")
    if not arrays:
        return _empty()
    return from_blocks([_blocks.block_from_batch({"data": a}) for a in arrays], "FromNumpy")


def from_numpy_refs(ndarrays) -> MaterializedDataset:
    """``from_numpy`` for arrays already in the object store (converted by tasks)."""
    refs = _as_list(ndarrays, ray.ObjectRef, "from_numpy_refs takes an ObjectRef of a numpy.ndarray or a list of them")
    pairs = [_tasks.numpy_block.remote(ref) for ref in refs]
    return MaterializedDataset(_plan.InputData(tuple(p[0] for p in pairs), tuple(p[1] for p in pairs), "FromNumpy"))


def from_modin(df) -> MaterializedDataset:
    """A Dataset whose blocks are the row partitions of a ``modin.pandas.DataFrame``."""
    try:
        from modin.distributed.dataframe.pandas import unwrap_partitions
    except ImportError as e:
        raise ImportError("ray.data.from_modin needs modin: pip install modin") from e
    return from_pandas_refs(unwrap_partitions(df, axis=0))


def _read(datasource: _io.FileDatasource, override_num_blocks: int | None) -> Dataset:
    ds = Dataset(_plan.Read(datasource))
    return ds.repartition(override_num_blocks) if override_num_blocks else ds


def read_csv(paths, *, include_paths: bool = False, override_num_blocks: int | None = None,
             **csv_args) -> Dataset:
    """One block per CSV file, each read by a task.

    ``paths``: a local file, a directory (every file under it) or a list of them;
    ``local://`` and ``file://`` prefixes are accepted. Files must be readable at the
    same path on every node. ``read_options``/``parse_options``/``convert_options``
    go to ``pyarrow.csv.read_csv`` (as in Ray); other keywords select
    ``pandas.read_csv`` and go to it.
    """
    if _blocks.pyarrow_or_none() is None or set(csv_args) - set(_io._ARROW_CSV_OPTIONS):
        _blocks.require_pandas("ray.data.read_csv")
    files = tuple(_io.list_files(paths, "read_csv"))
    return _read(_io.FileDatasource(files, "csv", csv_args, include_paths), override_num_blocks)


def read_json(paths, *, include_paths: bool = False, override_num_blocks: int | None = None) -> Dataset:
    """One block per JSON file: JSON lines (an object per line, what ``write_json``
    writes) or one JSON array of objects. ``paths`` as for ``read_csv``."""
    files = tuple(_io.list_files(paths, "read_json"))
    return _read(_io.FileDatasource(files, "json", {}, include_paths), override_num_blocks)


def read_text(paths, *, encoding: str = "utf-8", drop_empty_lines: bool = False,
              include_paths: bool = False, override_num_blocks: int | None = None) -> Dataset:
    """A row ``{"text": line}`` per line of every file (one block per file)."""
    files = tuple(_io.list_files(paths, "read_text"))
    options = {"encoding": encoding, "drop_empty_lines": drop_empty_lines}
    return _read(_io.FileDatasource(files, "text", options, include_paths), override_num_blocks)


def read_numpy(paths, *, include_paths: bool = False, override_num_blocks: int | None = None,
               **numpy_load_args) -> Dataset:
    """``.npy`` files, one block each: a row ``{"data": array[i]}`` per first-axis entry;
    keywords go to ``numpy.load`` (``allow_pickle`` is False unless given)."""
    files = tuple(_io.list_files(paths, "read_numpy"))
    return _read(_io.FileDatasource(files, "numpy", numpy_load_args, include_paths), override_num_blocks)


def read_parquet(paths, *, columns: list[str] | None = None, filter=None,  # noqa: A002 - Ray's name
                 include_paths: bool = False, override_num_blocks: int | None = None,
                 **arrow_parquet_args) -> Dataset:
    """One block per Parquet file (needs pyarrow). ``columns`` reads only those;
    ``filter`` (a ``pyarrow.compute.Expression``, a ``ray.data.expressions``
    expression or a string) reads only the matching rows, skipping row groups whose
    statistics rule it out. A ``select_columns`` or ``filter(expr=...)`` right after
    the read is pushed into it the same way. Other keywords go to
    ``pyarrow.parquet.read_table``."""
    _blocks.require_pyarrow("ray.data.read_parquet")
    files = tuple(_io.list_files(paths, "read_parquet"))
    options = dict(arrow_parquet_args)
    if columns is not None:
        options["columns"] = list(columns)
    if filter is not None:
        from ray.data.expressions import to_pyarrow_expression

        options["filter"] = to_pyarrow_expression(filter)
    return _read(_io.ParquetDatasource(files, "parquet", options, include_paths), override_num_blocks)


def _empty() -> MaterializedDataset:
    return from_blocks([_blocks.empty_block()])
