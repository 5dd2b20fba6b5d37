"""``Dataset.stats()``: what each operator of an execution did, in Ray's layout.

    Operator 1 ReadRange->MapBatches(<lambda>)->Filter(<lambda>): 4 tasks executed, 4 blocks produced in 0.19s
    * Remote wall time: 6.37ms min, 14.99ms max, 10.85ms mean, 43.4ms total
    * Remote cpu time: 3.52ms min, 8.57ms max, 5.02ms mean, 20.09ms total
    * Output num rows per block: 83 min, 84 max, 83 mean, 334 total
    * Output size bytes per block: 664 min, 672 max, 668 mean, 2672 total
    * Tasks per node: 4 min, 4 max, 4 mean; 1 nodes used

An all-to-all operator (sort, groupby, shuffles) lists its rounds of tasks as
sub-operators. Pure: built from block metadata, no ray calls.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ray.data._blocks import BlockMetadata


@dataclass
class OperatorStats:
    name: str
    output_metadata: list[BlockMetadata] = field(default_factory=list)
    num_tasks: int = 0
    wall_time_s: float = 0.0
    sub_stages: list[OperatorStats] = field(default_factory=list)

    @property
    def task_ids(self) -> set:
        return {m.exec_stats.task_id for m in self.output_metadata if m.exec_stats and m.exec_stats.task_id}

    def to_lines(self, index: int | None, indent: str = "") -> list[str]:
        label = f"Operator {index} {self.name}" if index is not None else f"Suboperator {self.name}"
        head = (f"{indent}{label}: {self.num_tasks} tasks executed, {len(self.output_metadata)} blocks "
                f"produced in {_seconds(self.wall_time_s)}")
        lines = [head]
        execs = [m.exec_stats for m in self.output_metadata if m.exec_stats is not None]
        if execs:
            lines.append(indent + "* Remote wall time: " + _spread([e.wall_time_s for e in execs], _ms))
            lines.append(indent + "* Remote cpu time: " + _spread([e.cpu_time_s for e in execs], _ms))
        if self.output_metadata:
            rows = [m.num_rows for m in self.output_metadata]
            sizes = [m.size_bytes for m in self.output_metadata]
            lines.append(indent + "* Output num rows per block: " + _spread(rows, _count))
            lines.append(indent + "* Output size bytes per block: " + _spread(sizes, _count))
        if execs:
            per_node = Counter(e.node_id for e in execs)
            counts = list(per_node.values())
            lines.append(
                f"{indent}* Tasks per node: {min(counts)} min, {max(counts)} max, "
                f"{sum(counts) // len(counts)} mean; {len(per_node)} nodes used"
            )
        if self.output_metadata and self.wall_time_s > 0:
            total_rows = sum(m.num_rows for m in self.output_metadata)
            lines.append(f"{indent}* Operator throughput: {total_rows / self.wall_time_s:.1f} rows/s")
        for sub in self.sub_stages:
            lines.extend(sub.to_lines(None, indent + "\t"))
        return lines


@dataclass
class DatasetStats:
    """The operators of one execution (and of the executions it read from)."""

    operators: list[OperatorStats] = field(default_factory=list)
    wall_time_s: float = 0.0
    parent: DatasetStats | None = None

    def all_operators(self) -> list[OperatorStats]:
        before = self.parent.all_operators() if self.parent is not None else []
        return before + self.operators

    def to_string(self) -> str:
        operators = [op for op in self.all_operators() if op.num_tasks or op.output_metadata or op.sub_stages]
        lines: list[str] = []
        for index, op in enumerate(operators):
            lines.extend(op.to_lines(index))
            lines.append("")
        rows = sum(m.num_rows for m in operators[-1].output_metadata) if operators else 0
        if self.wall_time_s > 0:
            lines += ["Dataset throughput:", f"\t* Ray Data throughput: {rows / self.wall_time_s:.1f} rows/s"]
        return "\n".join(lines).rstrip() + ("\n" if lines else "")


def _spread(values: list, fmt) -> str:
    total = sum(values)
    return (f"{fmt(min(values))} min, {fmt(max(values))} max, {fmt(total / len(values))} mean, "
            f"{fmt(total)} total")


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}ms"


def _count(value) -> str:
    return str(int(value))


def _seconds(value: float) -> str:
    return f"{value:.2f}s"
