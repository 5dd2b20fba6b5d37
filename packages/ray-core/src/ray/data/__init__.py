"""``ray.data``: a small Ray Datasets with the Ray 2.x API.

    import ray
    ds = ray.data.range(1000).map_batches(lambda b: {"id": b["id"] * 2})
    ds.filter(lambda row: row["id"] % 3 == 0).count()   # 334
    ds.sum("id")                                           # 999000
    ds.sort("id", descending=True).take(1)                 # [{"id": 1998}]
    ds.add_column("k", lambda df: df["id"] % 3).groupby("k").count().take_all()
    # [{"k": 0, "count()": 334}, {"k": 1, "count()": 333}, {"k": 2, "count()": 333}]

A Dataset is a list of blocks in the object store (pandas DataFrames where pandas is
installed, else lists of dict rows); every transformation runs one ray task per
block; ``sort``/``groupby`` are a sampled range partition run by tasks (``_sort``),
aggregations are accumulators (``ray.data.aggregate``). Execution is eager (see
``ray.data.dataset``). pandas is optional: the calls that need it (``from_pandas``, ``to_pandas``, ``read_csv``, ``batch_format="pandas"``)
say ``pip install pandas`` when it is missing. Modin's Ray engine uses
``from_pandas_refs`` and ``Dataset.to_pandas_refs``; ``from_modin``/``to_modin``
convert both ways.
"""

from ray.data import aggregate
from ray.data._blocks import BlockMetadata, Schema
from ray.data._grouped import GroupedData
from ray.data.dataset import Dataset, MaterializedDataset
from ray.data.read_api import (
    from_arrow,
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
    "BlockMetadata",
    "Dataset",
    "GroupedData",
    "MaterializedDataset",
    "Schema",
    "aggregate",
    "from_arrow",
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
