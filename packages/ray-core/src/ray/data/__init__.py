"""``ray.data``: a small Ray Datasets with the Ray 2.x API.

    import ray
    ds = ray.data.range(1000).map_batches(lambda b: {"id": b["id"] * 2})
    ds.filter(lambda row: row["id"] % 3 == 0).count()   # 334
    ds.sum("id")                                           # 999000
    ds.sort("id", descending=True).take(1)                 # [{"id": 1998}]
    ds.add_column("k", lambda df: df["id"] % 3).groupby("k").count().take_all()
    # [{"k": 0, "count()": 334}, {"k": 1, "count()": 333}, {"k": 2, "count()": 333}]

A Dataset is a lazy plan over blocks in the object store: Arrow tables where pyarrow
is installed (``pip install "ray-core[data]"``), pandas DataFrames users hand over,
lists of dict rows where neither is installed. Consuming it runs the plan with a
streaming executor that fuses consecutive maps into one task per block and bounds
the blocks in flight (``_plan``, ``_executor``); ``sort``/``groupby`` are all-to-all
operators on Arrow compute (``_shuffle``, ``_sort``, ``_arrow_groupby``). pandas and
pyarrow are optional: the calls that need one say ``pip install ...`` when it is
missing. Modin's Ray engine uses ``from_pandas_refs`` and ``Dataset.to_pandas_refs``;
``from_modin``/``to_modin`` convert both ways.
"""

from ray.data import aggregate, expressions
from ray.data._blocks import BlockMetadata, Schema
from ray.data._grouped import GroupedData
from ray.data._plan import ActorPoolStrategy, RefBundle
from ray.data._progress import ExecutionCallback, OperatorProgress
from ray.data.context import DataContext, DatasetContext, ExecutionOptions, ExecutionResources
from ray.data.dataset import Dataset, MaterializedDataset
from ray.data.read_api import (
    from_arrow,
    from_arrow_refs,
    from_items,
    from_modin,
    from_numpy,
    from_numpy_refs,
    from_pandas,
    from_pandas_refs,
    range,
    read_csv,
    read_json,
    read_numpy,
    read_parquet,
    read_text,
)

__all__ = [
    "ActorPoolStrategy",
    "BlockMetadata",
    "DataContext",
    "Dataset",
    "DatasetContext",
    "ExecutionCallback",
    "ExecutionOptions",
    "ExecutionResources",
    "GroupedData",
    "MaterializedDataset",
    "OperatorProgress",
    "RefBundle",
    "Schema",
    "aggregate",
    "expressions",
    "from_arrow",
    "from_arrow_refs",
    "from_items",
    "from_modin",
    "from_numpy",
    "from_numpy_refs",
    "from_pandas",
    "from_pandas_refs",
    "range",
    "read_csv",
    "read_json",
    "read_numpy",
    "read_parquet",
    "read_text",
]
