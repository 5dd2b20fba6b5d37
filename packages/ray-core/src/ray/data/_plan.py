"""Logical plans: what a Dataset will compute, and the rewrites done before it runs.

A Dataset holds one ``LogicalOperator``, the last of a chain (a tree where ``union``
and ``zip`` join several). Building a Dataset computes nothing; consuming it (count,
iter_batches, write_*, materialize, ...) hands the plan to ``_executor``, which first
``optimize``s it:

* **projection / filter pushdown**: ``select_columns`` and ``filter(expr=...)`` right
  after a read whose datasource can do them (Parquet) become part of the read, so
  unread columns and row groups never leave the file;
* **operator fusion**: consecutive one-to-one operators that run as tasks with the
  same ray options (``map``, ``map_batches``, ``filter``, ``flat_map``, column
  operations) become one operator whose task applies every transform to a block in
  turn, and a read absorbs the maps after it: ``read -> map_batches -> map_batches ->
  filter`` runs as one task per block, with no intermediate block in the store.

Operators:

==================  ==============================================================
``InputData``       blocks already in the object store (``from_*``, a materialized
                    Dataset); their metadata may still be computing (ObjectRefs)
``Read``            a ``Datasource``'s ``ReadTask``s, one block each, run as tasks
``MapOperator``     a block -> block transform, in tasks or in an actor pool
``Limit``           the first ``n`` rows
``AllToAll``        a barrier: a function of every input block that returns new
                    blocks (sort, groupby, repartition, random_shuffle, zip)
``Union``           the outputs of several plans, one after the other
==================  ==============================================================

Pure: no ray calls here (ObjectRefs are only carried).
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ray.data._blocks import BlockMetadata


@dataclass(frozen=True)
class RefBundle:
    """One block in the object store and what is known about it
    (``Dataset.iter_internal_ref_bundles()`` yields these)."""

    block_ref: Any  # ray.ObjectRef
    metadata: BlockMetadata

    @property
    def blocks(self) -> tuple:
        """``((block_ref, metadata),)``, Ray's spelling."""
        return ((self.block_ref, self.metadata),)

    @property
    def block_refs(self) -> list:
        return [self.block_ref]

    def num_rows(self) -> int:
        return self.metadata.num_rows

    def size_bytes(self) -> int:
        return self.metadata.size_bytes


@dataclass(frozen=True)
class ReadTask:
    """One block's worth of reading: ``read_fn()`` returns the block. Runs in a task."""

    read_fn: Callable[[], Any]
    input_files: tuple[str, ...] = ()
    num_rows: int | None = None  # known before reading (range), else None

    def __call__(self):
        return self.read_fn()


class Datasource(ABC):
    """Where a ``Read`` gets its blocks. A datasource that can read only some columns
    or rows returns a narrowed copy from ``with_columns``/``with_filter``; the others
    return None and the optimizer leaves the select or filter in place."""

    name: str = "Read"

    @abstractmethod
    def read_tasks(self) -> list[ReadTask]: ...

    def with_columns(self, columns: list) -> Datasource | None:
        return None

    def with_filter(self, expression) -> Datasource | None:
        return None

    def num_rows(self) -> int | None:
        """Rows, when known without reading."""
        return None

    def schema(self):
        """The ``Schema`` of the blocks, when known without reading."""
        return None


class LogicalOperator:
    """A node of a plan; ``inputs`` are the operators it reads from."""

    inputs: tuple = ()

    @property
    def name(self) -> str:
        return type(self).__name__


@dataclass(frozen=True, eq=False)
class InputData(LogicalOperator):
    block_refs: tuple
    metadata: tuple  # BlockMetadata, or the ObjectRef of one being computed
    label: str = "InputData"
    stats: Any = None  # the DatasetStats of the execution that made these blocks

    @property
    def name(self) -> str:
        return self.label


@dataclass(frozen=True, eq=False)
class Read(LogicalOperator):
    datasource: Datasource
    transforms: tuple = ()  # maps fused into the read tasks
    transform_names: tuple = ()
    ray_remote_args: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return "->".join([self.datasource.name, *self.transform_names])


@dataclass(frozen=True)
class ActorPoolStrategy:
    """Run a callable class in ``size`` actors (``ray.data.ActorPoolStrategy``;
    ``min_size``/``max_size`` are accepted, the pool is ``max_size`` actors)."""

    size: int | None = None
    min_size: int | None = None
    max_size: int | None = None

    def num_actors(self) -> int | None:
        return self.size or self.max_size or self.min_size


@dataclass(frozen=True, eq=False)
class MapOperator(LogicalOperator):
    """``transform(block) -> block`` on every block of ``input_op``. ``fn_class`` set:
    the transform needs an instance of that class, built once per actor."""

    input_op: LogicalOperator
    transform: Callable
    label: str
    ray_remote_args: dict = field(default_factory=dict)
    concurrency: int | None = None  # tasks: most in flight; actors: pool size
    fn_class: type | None = None
    fn_constructor: tuple = ((), {})
    # Columns after this operator, from the columns before it (None: not known
    # without running it); used to check column names when the plan is built.
    columns_after: Callable[[list], list | None] | None = None
    pushdown_columns: tuple | None = None  # a plain select_columns: a read may do it
    pushdown_filter: Any = None  # a filter(expr=...): a read may do it

    @property
    def inputs(self) -> tuple:
        return (self.input_op,)

    @property
    def name(self) -> str:
        return self.label

    @property
    def uses_actors(self) -> bool:
        return self.fn_class is not None


@dataclass(frozen=True, eq=False)
class Limit(LogicalOperator):
    input_op: LogicalOperator
    limit: int

    @property
    def inputs(self) -> tuple:
        return (self.input_op,)

    @property
    def name(self) -> str:
        return f"Limit[limit={self.limit}]"


@dataclass(frozen=True, eq=False)
class AllToAll(LogicalOperator):
    """``run(inputs, context) -> list[RefBundle]``: ``inputs`` is one list of bundles
    per input operator; ``context`` submits tasks and records sub-stage stats."""

    input_ops: tuple
    run: Callable
    label: str
    columns_after: Callable[[list], list | None] | None = None

    @property
    def inputs(self) -> tuple:
        return self.input_ops

    @property
    def name(self) -> str:
        return self.label


@dataclass(frozen=True, eq=False)
class Union(LogicalOperator):
    input_ops: tuple

    @property
    def inputs(self) -> tuple:
        return self.input_ops


# -- what is known without running ------------------------------------------------------


def known_columns(op: LogicalOperator) -> list | None:
    """The columns ``op`` outputs, where known from metadata alone (None if not)."""
    if isinstance(op, InputData):
        schemas = [m.schema for m in op.metadata if isinstance(m, BlockMetadata) and m.schema is not None]
        if len(schemas) != len(op.metadata) and not schemas:
            return None
        return list(schemas[0].names) if schemas else None
    if isinstance(op, Read):
        schema = op.datasource.schema() if not op.transforms else None
        return list(schema.names) if schema is not None else None
    if isinstance(op, (MapOperator, AllToAll)):
        if op.columns_after is None:
            return None
        before = known_columns(op.inputs[0]) if op.inputs else None
        return None if before is None else op.columns_after(before)
    if isinstance(op, Limit):
        return known_columns(op.input_op)
    if isinstance(op, Union):
        return known_columns(op.input_ops[0])
    return None


def known_num_rows(op: LogicalOperator) -> int | None:
    """Rows ``op`` outputs, where known without running it."""
    if isinstance(op, InputData):
        if all(isinstance(m, BlockMetadata) for m in op.metadata):
            return sum(m.num_rows for m in op.metadata)
        return None
    if isinstance(op, Read) and not op.transforms:
        return op.datasource.num_rows()
    if isinstance(op, Limit):
        rows = known_num_rows(op.input_op)
        return None if rows is None else min(rows, op.limit)
    if isinstance(op, Union):
        counts = [known_num_rows(i) for i in op.input_ops]
        return None if None in counts else sum(counts)
    return None


# -- rewrites ------------------------------------------------------------------------------


def optimize(op: LogicalOperator) -> LogicalOperator:
    """``op`` with pushdowns and fusion applied (bottom-up)."""
    if isinstance(op, MapOperator):
        child = optimize(op.input_op)
        pushed = _push_into_read(child, op)
        if pushed is not None:
            return pushed
        fused = _fuse(child, op)
        return fused if fused is not None else dataclasses.replace(op, input_op=child)
    if isinstance(op, Limit):
        return dataclasses.replace(op, input_op=optimize(op.input_op))
    if isinstance(op, AllToAll):
        return dataclasses.replace(op, input_ops=tuple(optimize(i) for i in op.input_ops))
    if isinstance(op, Union):
        return dataclasses.replace(op, input_ops=tuple(optimize(i) for i in op.input_ops))
    return op


def _push_into_read(child: LogicalOperator, op: MapOperator) -> LogicalOperator | None:
    if not isinstance(child, Read) or child.transforms:
        return None
    narrowed = None
    if op.pushdown_columns is not None:
        narrowed = child.datasource.with_columns(list(op.pushdown_columns))
    elif op.pushdown_filter is not None:
        narrowed = child.datasource.with_filter(op.pushdown_filter)
    return None if narrowed is None else dataclasses.replace(child, datasource=narrowed)


def _fuse(child: LogicalOperator, op: MapOperator) -> LogicalOperator | None:
    if op.uses_actors or op.concurrency is not None:
        return None
    if isinstance(child, Read) and _same_options(child.ray_remote_args, op.ray_remote_args):
        return dataclasses.replace(
            child,
            transforms=(*child.transforms, op.transform),
            transform_names=(*child.transform_names, op.label),
        )
    if (isinstance(child, MapOperator) and not child.uses_actors and child.concurrency is None
            and _same_options(child.ray_remote_args, op.ray_remote_args)):
        return dataclasses.replace(
            op,
            input_op=child.input_op,
            transform=FusedTransform.of(child.transform, op.transform),
            label=f"{child.label}->{op.label}",
            columns_after=_compose(child.columns_after, op.columns_after),
            pushdown_columns=None,
            pushdown_filter=None,
        )
    return None


def _same_options(a: dict, b: dict) -> bool:
    return {k: v for k, v in a.items() if v is not None} == {k: v for k, v in b.items() if v is not None}


def _compose(first, second):
    if first is None or second is None:
        return None

    def both(columns):
        middle = first(columns)
        return None if middle is None else second(middle)

    return both


@dataclass(frozen=True)
class FusedTransform:
    """Several block transforms applied in turn inside one task."""

    steps: tuple

    @classmethod
    def of(cls, *transforms) -> FusedTransform:
        steps: list = []
        for t in transforms:
            steps.extend(t.steps if isinstance(t, FusedTransform) else [t])
        return cls(tuple(steps))

    def __call__(self, block):
        for step in self.steps:
            block = step(block)
        return block

    def with_instance(self, instance) -> FusedTransform:
        return FusedTransform(tuple(
            s.with_instance(instance) if hasattr(s, "with_instance") else s for s in self.steps
        ))


def describe(op: LogicalOperator, depth: int = 0) -> list[str]:
    """The plan as Ray prints it: the last operator first, ``+-`` before each input."""
    lines = [("   " * (depth - 1) + "+- " if depth else "") + _node_label(op)]
    for child in op.inputs:
        lines.extend(describe(child, depth + 1))
    return lines


def _node_label(op: LogicalOperator) -> str:
    schema = known_schema(op) if isinstance(op, (InputData, Read)) else None
    if isinstance(op, InputData) or (isinstance(op, Read) and not op.transforms and schema is not None):
        rows = known_num_rows(op)
        shown = schema.as_braces() if schema is not None else "Unknown schema"
        return f"Dataset(num_rows={rows if rows is not None else '?'}, schema={shown})"
    return op.name


def known_schema(op: LogicalOperator):
    """The ``Schema`` of a source, where known without running it."""
    if isinstance(op, InputData):
        resolved = [m for m in op.metadata if isinstance(m, BlockMetadata) and m.schema is not None]
        with_rows = [m.schema for m in resolved if m.num_rows]
        return (with_rows or [m.schema for m in resolved] or [None])[0]
    if isinstance(op, Read) and not op.transforms:
        return op.datasource.schema()
    return None
