"""Making Datasets: from driver memory (``from_items``/``from_pandas``/``from_numpy``),
from ObjectRefs already in the store (``from_pandas_refs``/``from_numpy_refs``, what
Modin hands over), from tasks (``range``) and from files (``read_csv``, ``read_json``,
``read_text``, ``read_numpy``, ``read_parquet``; one task per file, see ``_io``)."""

from __future__ import annotations

import builtins

import numpy as np

import ray
from ray._private.object_ref import ObjectRef
from ray.data import _blocks, _io, _tasks
from ray.data.dataset import Dataset, _put_block


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
    """Rows ``{"id": 0}`` .. ``{"id": n - 1}``, each block made by a task."""
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"ray.data.range needs a non-negative int, got {n!r}")
    parts = _num_blocks(int(n), parallelism, override_num_blocks)
    outputs = [_tasks.range_block.remote(lo, hi) for lo, hi in _bounds(int(n), parts)]
    return Dataset([o[0] for o in outputs], [o[1] for o in outputs])


def from_items(items: list, *, parallelism: int = -1, override_num_blocks: int | None = None) -> Dataset:
    """A Dataset of ``items``: dicts become rows, anything else becomes ``{"item": x}``."""
    if not isinstance(items, (list, tuple)):
        raise TypeError(f"from_items needs a list, got {type(items).__name__}")
    rows = [item if isinstance(item, dict) else {"item": item} for item in items]
    parts = _num_blocks(len(rows), parallelism, override_num_blocks)
    outputs = [_put_block(_blocks.build_block(rows[lo:hi])) for lo, hi in _bounds(len(rows), parts)]
    return Dataset([o[0] for o in outputs], [o[1] for o in outputs])


def _as_list(value, kind, what: str) -> list:
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    for v in values:
        if not isinstance(v, kind):
            raise TypeError(f"{what}, got {type(v).__name__}")
    return values


def from_pandas(dfs, *, override_num_blocks: int | None = None) -> Dataset:
    """One block per DataFrame (``dfs``: a DataFrame or a list of them)."""
    pd = _blocks.require_pandas("ray.data.from_pandas")
    frames = _as_list(dfs, pd.DataFrame, "from_pandas takes a pandas.DataFrame or a list of them")
    ds = Dataset(*zip(*[_put_block(f) for f in frames])) if frames else _empty()
    return ds.repartition(override_num_blocks) if override_num_blocks else ds


def from_pandas_refs(dfs) -> Dataset:
    """One block per ObjectRef of a pandas DataFrame (how Modin hands its partitions
    over: ``modin.pandas.io.to_ray``). The DataFrames are not copied; their row counts
    and schemas are read by tasks."""
    refs = _as_list(dfs, ObjectRef, "from_pandas_refs takes an ObjectRef of a pandas.DataFrame or a list of them")
    return Dataset(refs, [_tasks.block_metadata.remote(ref) for ref in refs])


def from_numpy(ndarrays) -> Dataset:
    """One block per array, in a column named ``data`` (one row per first-axis entry)."""
    arrays = _as_list(ndarrays, np.ndarray, "from_numpy takes a numpy.ndarray or a list of them")
    outputs = [_put_block(_blocks.block_from_batch({"data": a})) for a in arrays]
    return Dataset(*zip(*outputs)) if outputs else _empty()


def from_numpy_refs(ndarrays) -> Dataset:
    """``from_numpy`` for arrays already in the object store (converted by tasks)."""
    refs = _as_list(ndarrays, ObjectRef, "from_numpy_refs takes an ObjectRef of a numpy.ndarray or a list of them")
    outputs = [_tasks.numpy_block.remote(ref) for ref in refs]
    return Dataset([o[0] for o in outputs], [o[1] for o in outputs])


def from_modin(df) -> Dataset:
    """A Dataset whose blocks are the row partitions of a ``modin.pandas.DataFrame``."""
    try:
        from modin.distributed.dataframe.pandas import unwrap_partitions
    except ImportError as e:
        raise ImportError("ray.data.from_modin needs modin: pip install modin") from e
    return from_pandas_refs(unwrap_partitions(df, axis=0))


def _read(paths, fmt: str, what: str, *, include_paths: bool, override_num_blocks: int | None,
          options: dict) -> Dataset:
    outputs = [
        _io.read_file_task.remote(path, fmt, include_paths, options) for path in _io.list_files(paths, what)
    ]
    ds = Dataset([o[0] for o in outputs], [o[1] for o in outputs])
    return ds.repartition(override_num_blocks) if override_num_blocks else ds


def read_csv(paths, *, include_paths: bool = False, override_num_blocks: int | None = None,
             **pandas_kwargs) -> Dataset:
    """One block per CSV file, each read by a task with ``pandas.read_csv``.

    ``paths``: a local file, a directory (every file under it) or a list of them;
    ``local://`` and ``file://`` prefixes are accepted. Files must be readable at the
    same path on every node. Extra keyword arguments go to ``pandas.read_csv``.
    """
    _blocks.require_pandas("ray.data.read_csv")
    return _read(paths, "csv", "read_csv", include_paths=include_paths,
                 override_num_blocks=override_num_blocks, options=pandas_kwargs)


def read_json(paths, *, include_paths: bool = False, override_num_blocks: int | None = None) -> Dataset:
    """One block per JSON file: JSON lines (an object per line, what ``write_json``
    writes) or one JSON array of objects. ``paths`` as for ``read_csv``."""
    return _read(paths, "json", "read_json", include_paths=include_paths,
                 override_num_blocks=override_num_blocks, options={})


def read_text(paths, *, encoding: str = "utf-8", drop_empty_lines: bool = False,
              include_paths: bool = False, override_num_blocks: int | None = None) -> Dataset:
    """A row ``{"text": line}`` per line of every file (one block per file)."""
    return _read(paths, "text", "read_text", include_paths=include_paths,
                 override_num_blocks=override_num_blocks,
                 options={"encoding": encoding, "drop_empty_lines": drop_empty_lines})


def read_numpy(paths, *, include_paths: bool = False, override_num_blocks: int | None = None,
               **numpy_load_args) -> Dataset:
    """``.npy`` files, one block each: a row ``{"data": array[i]}`` per first-axis entry;
    keywords go to ``numpy.load`` (``allow_pickle`` is False unless given)."""
    return _read(paths, "numpy", "read_numpy", include_paths=include_paths,
                 override_num_blocks=override_num_blocks, options=numpy_load_args)


def read_parquet(paths, *, columns: list[str] | None = None, include_paths: bool = False,
                 override_num_blocks: int | None = None) -> Dataset:
    """One block per Parquet file (needs pyarrow: ``pip install pyarrow``);
    ``columns`` reads only those."""
    _blocks.require_pyarrow("ray.data.read_parquet")
    return _read(paths, "parquet", "read_parquet", include_paths=include_paths,
                 override_num_blocks=override_num_blocks, options={"columns": columns})


def from_arrow(tables) -> Dataset:
    """One block per ``pyarrow.Table`` (needs pyarrow; stored as pandas where it is
    installed)."""
    pa = _blocks.require_pyarrow("ray.data.from_arrow")
    tables = _as_list(tables, pa.Table, "from_arrow takes a pyarrow.Table or a list of them")
    outputs = [_put_block(_blocks.block_from_batch(t)) for t in tables]
    return Dataset(*zip(*outputs)) if outputs else _empty()


def _empty() -> Dataset:
    return Dataset(*zip(_put_block(_blocks.build_block([]))))
