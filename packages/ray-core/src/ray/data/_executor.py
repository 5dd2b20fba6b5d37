"""The streaming executor: runs an optimized plan as a pipeline of physical operators.

    for bundle in execute(plan):       # RefBundle(block_ref, metadata), in order
        ...                            # drop the bundle when done: its block is freed

The plan's chain becomes a list of physical operators, the source first:

* ``InputOp``: blocks already in the store;
* ``TaskPoolOp``: one ray task per input block (or per read task, for a source),
  applying a (fused) transform; the task returns the block and its metadata;
* ``ActorPoolOp``: the same in a pool of actors holding a callable class;
* ``LimitOp``, ``AllToAllOp`` (a barrier: sort, groupby, shuffles), ``UnionOp``.

One loop, in the consuming thread, moves finished blocks downstream and starts new
tasks while the consumer works on the blocks it was handed. Two bounds keep a
pipeline over more data than the object store holds running without spilling:

* each operator has at most ``max_in_flight`` tasks running (the CPUs (GPUs) its
  tasks may hold: ``DataContext.execution_options.resource_limits``, else the
  cluster's);
* a new task starts only while the bytes of blocks the pipeline holds (finished but
  not yet consumed, plus the expected output of the tasks in flight) stay under the
  object-store budget (``resource_limits.object_store_memory``, else half the
  cluster's store). Blocks leave the budget when the next operator or the consumer
  takes them; the executor keeps no reference to a block it has handed on, so a
  consumed block is freed at once.

Outputs keep the input order. Progress goes to the ``ExecutionCallback``s of the
``DataContext`` (see ``_progress``), stats to ``DatasetStats``.
"""

from __future__ import annotations

import pickle
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator

import cloudpickle

import ray
from ray.data import _plan, _tasks
from ray.data._blocks import BlockMetadata
from ray.data._plan import RefBundle
from ray.data._progress import OperatorProgress, ProgressBars
from ray.data._stats import DatasetStats, OperatorStats
from ray.data.context import DataContext
from ray.experimental.progress_bar import progress_bars_enabled

# A transform bigger than this (pickled) is put in the store once per operator
# instead of travelling inside every task.
_INLINE_TRANSFORM_BYTES = 64 * 1024
_IN_FLIGHT_PER_CPU = 2  # tasks per CPU kept in flight, so a worker never waits for work
_CANCEL_POLL_S = 0.5  # how often a run waiting for tasks checks whether it was cancelled
_TASKS_PER_ACTOR = 2


class ExecutionLimits:
    """What one execution may hold: tasks per operator and bytes of blocks."""

    def __init__(self, context: DataContext):
        limits = context.execution_options.resource_limits
        resources = ray.cluster_resources()
        self.cpus = limits.cpu if limits.cpu is not None else max(resources.get("CPU", 1.0), 1.0)
        self.gpus = limits.gpu if limits.gpu is not None else resources.get("GPU", 0.0)
        store = resources.get("object_store_memory", 0)
        self.object_store_bytes = (
            limits.object_store_memory if limits.object_store_memory is not None
            else int(store // 2) if store else 1 << 30
        )

    def max_in_flight(self, remote_args: dict, concurrency: int | None) -> int:
        cpus = remote_args.get("num_cpus")
        cpus = 1.0 if cpus is None else float(cpus)
        gpus = float(remote_args.get("num_gpus") or 0)
        slots = [_IN_FLIGHT_PER_CPU * self.cpus / cpus if cpus > 0 else 64]
        if gpus > 0:
            slots.append(max(self.gpus, 1) / gpus)
        limit = max(int(min(slots)), 1)
        return min(limit, concurrency) if concurrency is not None else limit


# -- physical operators ---------------------------------------------------------------


class PhysicalOp:
    """A stage of the pipeline: takes bundles in, hands bundles out, in order."""

    def __init__(self, name: str):
        self.name = name
        self.index = 0
        self.outputs: deque[RefBundle] = deque()
        self.inputs_closed = False
        self.stats = OperatorStats(name)
        self.total_blocks: int | None = None
        self._started_at: float | None = None
        self._finished = False

    # Blocks this operator makes are new in the store (an InputOp's are not): they
    # count against the budget until the consumer takes them.
    makes_new_blocks = True

    # inputs
    def add_input(self, bundle: RefBundle, counted: bool = True) -> None:
        raise NotImplementedError(f"{self.name} takes no input")

    def close_inputs(self) -> None:
        self.inputs_closed = True

    # work
    def wants_to_dispatch(self) -> bool:
        return False

    def next_output_bytes(self) -> int:
        """Expected bytes of one more task's output (0 when unknown)."""
        outputs = self.stats.output_metadata
        return sum(m.size_bytes for m in outputs) // len(outputs) if outputs else 0

    def dispatch_one(self) -> None:
        raise NotImplementedError

    def pending_refs(self) -> list:
        return []

    def on_ready(self, ready: set) -> bool:
        return False

    # accounting
    def held_bytes(self) -> int:
        """Bytes of blocks this operator holds: outputs not taken and inputs queued."""
        return sum(b.metadata.size_bytes for b in self.outputs)

    def in_flight_bytes(self) -> int:
        return 0

    def active_tasks(self) -> int:
        return 0

    def done(self) -> bool:
        """No more outputs will come (those in ``outputs`` may still be taken)."""
        return self._finished

    def _mark_started(self) -> None:
        if self._started_at is None:
            self._started_at = time.perf_counter()

    def _mark_finished(self) -> None:
        if not self._finished:
            self._finished = True
            if self._started_at is not None:
                self.stats.wall_time_s = time.perf_counter() - self._started_at

    def shutdown(self) -> None:
        self.outputs.clear()

    def progress(self) -> OperatorProgress:
        outputs = self.stats.output_metadata
        return OperatorProgress(
            self.index, self.name, len(outputs), self.total_blocks, sum(m.num_rows for m in outputs),
            sum(m.size_bytes for m in outputs), self.active_tasks(), self.done(),
        )


class InputOp(PhysicalOp):
    """Blocks already in the store; metadata still being computed is fetched once."""

    makes_new_blocks = False

    def __init__(self, op: _plan.InputData):
        super().__init__(op.name)
        pending = [m for m in op.metadata if not isinstance(m, BlockMetadata)]
        resolved = iter(ray.get(pending)) if pending else iter(())
        metadata = [m if isinstance(m, BlockMetadata) else next(resolved) for m in op.metadata]
        self.outputs.extend(RefBundle(r, m) for r, m in zip(op.block_refs, metadata))
        self.total_blocks = len(metadata)
        self.inputs_closed = True
        self._finished = True

    def held_bytes(self) -> int:
        return 0  # the blocks live in the store whether or not this execution runs


class _OrderedTasks(PhysicalOp):
    """Runs work items as tasks (or actor calls) returning (block, metadata), and
    hands the outputs on in submission order."""

    def __init__(self, name: str, max_in_flight: int):
        super().__init__(name)
        self.max_in_flight = max_in_flight
        self._queue: deque = deque()  # work items not submitted yet
        self._queued_bytes = 0  # of queued inputs this execution made
        self._running: dict = {}  # metadata ref -> (sequence number, block ref)
        self._done_out_of_order: dict[int, RefBundle] = {}
        self._next_sequence = 0
        self._next_to_emit = 0

    def add_input(self, bundle: RefBundle, counted: bool = True) -> None:
        size = bundle.metadata.size_bytes if counted else 0
        self._queue.append((bundle, size))
        self._queued_bytes += size

    def wants_to_dispatch(self) -> bool:
        return bool(self._queue) and len(self._running) < self.max_in_flight

    def dispatch_one(self) -> None:
        self._mark_started()
        item, size = self._queue.popleft()
        self._queued_bytes -= size
        block_ref, meta_ref = self._submit(item, self._next_sequence)
        self._running[meta_ref] = (self._next_sequence, block_ref)
        self._next_sequence += 1
        self.stats.num_tasks += 1

    def _submit(self, item, index: int) -> tuple:
        raise NotImplementedError

    def pending_refs(self) -> list:
        return list(self._running)

    def on_ready(self, ready: set) -> bool:
        finished = [ref for ref in self._running if ref in ready]
        if not finished:
            return False
        metadata = ray.get(finished)  # small; a task's error is raised here
        for ref, meta in zip(finished, metadata):
            sequence, block_ref = self._running.pop(ref)
            self._done_out_of_order[sequence] = RefBundle(block_ref, meta)
            self.stats.output_metadata.append(meta)
        while self._next_to_emit in self._done_out_of_order:
            self.outputs.append(self._done_out_of_order.pop(self._next_to_emit))
            self._next_to_emit += 1
        self._check_finished()
        return True

    def close_inputs(self) -> None:
        super().close_inputs()
        self._check_finished()

    def _check_finished(self) -> None:
        if self.inputs_closed and not self._queue and not self._running:
            self._mark_finished()

    def held_bytes(self) -> int:
        waiting = sum(b.metadata.size_bytes for b in self._done_out_of_order.values())
        return super().held_bytes() + self._queued_bytes + waiting

    def in_flight_bytes(self) -> int:
        return len(self._running) * self.next_output_bytes()

    def active_tasks(self) -> int:
        return len(self._running)

    def shutdown(self) -> None:
        super().shutdown()
        self._queue.clear()
        self._running.clear()
        self._done_out_of_order.clear()


def _shipped(transform):
    """The transform pickled once (``_tasks.PrePickled``), or an ObjectRef of it when it
    is too big to travel in every task."""
    if transform is None:
        return None
    try:
        data = cloudpickle.dumps(transform, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - unpicklable: let the task submission report it
        return transform
    return ray.put(transform) if len(data) > _INLINE_TRANSFORM_BYTES else _tasks.PrePickled(data)


class TaskPoolOp(_OrderedTasks):
    """One task per input block (or per read task when ``read_tasks`` is given)."""

    def __init__(self, name: str, transform, remote_args: dict, max_in_flight: int,
                 read_tasks: list | None = None):
        super().__init__(name, max_in_flight)
        self._transform = _shipped(transform)
        self._task = _tasks.run_map.options(**remote_args) if remote_args else _tasks.run_map
        if read_tasks is not None:
            self._queue.extend((task, 0) for task in read_tasks)
            self.total_blocks = len(read_tasks)
            self.inputs_closed = True
            self._check_finished()

    def _submit(self, item, index: int) -> tuple:
        source = item.block_ref if isinstance(item, RefBundle) else item
        return self._task.remote(self._transform, source, index)


class ActorPoolOp(_OrderedTasks):
    """A callable class in ``size`` actors, each built once; blocks go to the actor
    with the fewest calls in flight."""

    def __init__(self, name: str, op: _plan.MapOperator, size: int, remote_args: dict):
        super().__init__(name, size * _TASKS_PER_ACTOR)
        self._op = op
        self._size = size
        self._remote_args = remote_args
        self._actors: list = []
        self._calls: dict = {}  # metadata ref -> actor index
        self._transform = _shipped(op.transform)

    def _submit(self, item, index: int) -> tuple:
        if not self._actors:
            actor_cls = _tasks.TransformActor.options(**self._remote_args) if self._remote_args else _tasks.TransformActor
            args, kwargs = self._op.fn_constructor
            self._actors = [actor_cls.remote(self._op.fn_class, args, kwargs) for _ in range(self._size)]
        load = [0] * len(self._actors)
        for index in self._calls.values():
            load[index] += 1
        least = min(range(len(self._actors)), key=load.__getitem__)
        block_ref, meta_ref = self._actors[least].apply.remote(item.block_ref, self._transform, index)
        self._calls[meta_ref] = least
        return block_ref, meta_ref

    def on_ready(self, ready: set) -> bool:
        for ref in ready:
            self._calls.pop(ref, None)
        return super().on_ready(ready)

    def _check_finished(self) -> None:
        super()._check_finished()
        if self.done():
            self._stop_actors()

    def _stop_actors(self) -> None:
        for actor in self._actors:
            ray.kill(actor)
        self._actors = []

    def shutdown(self) -> None:
        super().shutdown()
        self._stop_actors()


class LimitOp(PhysicalOp):
    """Passes bundles on until ``limit`` rows went by; the block crossing the limit
    is cut by a task. Upstream operators stop once it is done."""

    def __init__(self, limit: int):
        super().__init__(f"Limit[limit={limit}]")
        self._remaining = limit
        self._cutting: dict = {}  # metadata ref -> block ref
        if limit == 0:
            self._mark_finished()

    def add_input(self, bundle: RefBundle, counted: bool = True) -> None:
        self._mark_started()
        if self._remaining <= 0:
            return
        rows = bundle.metadata.num_rows
        if rows <= self._remaining:
            self._remaining -= rows
            self.outputs.append(bundle)
            self.stats.output_metadata.append(bundle.metadata)
        else:
            block_ref, meta_ref = _tasks.slice_block_task.remote(bundle.block_ref, 0, self._remaining)
            self.stats.num_tasks += 1
            self._cutting[meta_ref] = block_ref
            self._remaining = 0
        self._check_finished()

    def close_inputs(self) -> None:
        super().close_inputs()
        self._check_finished()

    def pending_refs(self) -> list:
        return list(self._cutting)

    def on_ready(self, ready: set) -> bool:
        finished = [ref for ref in self._cutting if ref in ready]
        for ref, meta in zip(finished, ray.get(finished)):
            bundle = RefBundle(self._cutting.pop(ref), meta)
            self.outputs.append(bundle)
            self.stats.output_metadata.append(meta)
        self._check_finished()
        return bool(finished)

    def _check_finished(self) -> None:
        if not self._cutting and (self._remaining <= 0 or self.inputs_closed):
            self._mark_finished()


class AllToAllContext:
    """What an all-to-all function gets besides its input: stats for its rounds."""

    def __init__(self, stats: OperatorStats):
        self._stats = stats

    def record_round(self, name: str, output_metadata: list[BlockMetadata], num_tasks: int,
                     wall_time_s: float) -> None:
        self._stats.sub_stages.append(OperatorStats(name, list(output_metadata), num_tasks, wall_time_s))
        self._stats.num_tasks += num_tasks


class AllToAllOp(PhysicalOp):
    """A barrier: gathers every input block, then runs the operator's function."""

    def __init__(self, op: _plan.AllToAll, child_streams: list[Callable[[], Iterator[RefBundle]]] | None = None):
        super().__init__(op.name)
        self._run = op.run
        self._inputs: list[RefBundle] = []
        self._child_streams = child_streams  # several inputs: each executed on its own

    def add_input(self, bundle: RefBundle, counted: bool = True) -> None:
        # A barrier holds every input whatever the budget (they are not counted).
        self._mark_started()
        self._inputs.append(bundle)

    def wants_to_dispatch(self) -> bool:
        ready = self.inputs_closed or self._child_streams is not None
        return ready and not self.done()

    def next_output_bytes(self) -> int:
        return 0  # a barrier: its inputs are already held

    def dispatch_one(self) -> None:
        self._mark_started()
        if self._child_streams is not None:
            inputs = [list(stream()) for stream in self._child_streams]
        else:
            inputs, self._inputs = [self._inputs], []
        outputs = self._run(inputs, AllToAllContext(self.stats))
        self.outputs.extend(outputs)
        self.stats.output_metadata.extend(b.metadata for b in outputs)
        self.total_blocks = len(outputs)
        self._mark_finished()

    def shutdown(self) -> None:
        super().shutdown()
        self._inputs = []


class UnionOp(PhysicalOp):
    """The outputs of several plans, one plan after the other, each streamed."""

    def __init__(self, streams: list[Callable[[], Iterator[RefBundle]]]):
        super().__init__("Union")
        self._streams = deque(streams)
        self._current: Iterator[RefBundle] | None = None

    def wants_to_dispatch(self) -> bool:
        return not self.done()

    def dispatch_one(self) -> None:
        self._mark_started()
        while True:
            if self._current is None:
                if not self._streams:
                    self._mark_finished()
                    return
                self._current = self._streams.popleft()()
            bundle = next(self._current, None)
            if bundle is not None:
                self.outputs.append(bundle)
                self.stats.output_metadata.append(bundle.metadata)
                return
            self._current = None

    def shutdown(self) -> None:
        super().shutdown()
        if self._current is not None:
            self._current.close()
        self._streams.clear()


# -- building and running the pipeline -----------------------------------------------------


def _build(op: _plan.LogicalOperator, limits: ExecutionLimits, context: DataContext) -> list[PhysicalOp]:
    if isinstance(op, _plan.InputData):
        return [InputOp(op)]
    if isinstance(op, _plan.Read):
        transform = _plan.FusedTransform.of(*op.transforms) if op.transforms else None
        tasks = op.datasource.read_tasks()
        return [TaskPoolOp(op.name, transform, op.ray_remote_args,
                           limits.max_in_flight(op.ray_remote_args, None), read_tasks=tasks)]
    if isinstance(op, _plan.Union):
        return [UnionOp([_stream_of(child, context) for child in op.input_ops])]
    if isinstance(op, _plan.AllToAll) and len(op.input_ops) != 1:
        return [AllToAllOp(op, [_materialized_stream_of(child, context) for child in op.input_ops])]
    upstream = _build(op.inputs[0], limits, context)
    if isinstance(op, _plan.MapOperator):
        if op.uses_actors:
            return [*upstream, ActorPoolOp(op.name, op, op.concurrency, op.ray_remote_args)]
        in_flight = limits.max_in_flight(op.ray_remote_args, op.concurrency)
        return [*upstream, TaskPoolOp(op.name, op.transform, op.ray_remote_args, in_flight)]
    if isinstance(op, _plan.Limit):
        return [*upstream, LimitOp(op.limit)]
    if isinstance(op, _plan.AllToAll):
        return [*upstream, AllToAllOp(op)]
    raise TypeError(f"cannot execute a {type(op).__name__}")


def _stream_of(op, context):
    return lambda: iter(Execution(op, context, optimized=True))


def _materialized_stream_of(op, context):
    return lambda: list(Execution(op, context, optimized=True))


class Execution:
    """One run of a plan: iterate it for the output bundles, then read ``stats``."""

    def __init__(self, op: _plan.LogicalOperator, context: DataContext | None = None, *,
                 optimized: bool = False, parent_stats: DatasetStats | None = None):
        self._plan = op if optimized else _plan.optimize(op)
        self._context = context or DataContext.get_current()
        self.stats = DatasetStats(parent=parent_stats)
        self.completed = False
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        """Stop the run from another thread: the loop returns within a poll interval
        (it is blocked only waiting for tasks), dropping what it holds."""
        self._cancelled.set()

    def __iter__(self) -> Iterator[RefBundle]:
        limits = ExecutionLimits(self._context)
        start = time.perf_counter()
        ops = _build(self._plan, limits, self._context)
        for index, op in enumerate(ops):
            op.index = index
        self.stats.operators = [op.stats for op in ops]
        callbacks = list(self._context.execution_callbacks)
        if self._context.enable_progress_bars and progress_bars_enabled():
            callbacks.append(ProgressBars())
        for callback in callbacks:
            callback.on_execution_start([op.name for op in ops])
        try:
            yield from _run(ops, limits, callbacks, self._cancelled)
            self.completed = not self._cancelled.is_set()
        finally:
            for op in ops:
                op.shutdown()
            self.stats.wall_time_s = time.perf_counter() - start
            for callback in callbacks:
                callback.on_execution_end(self.stats, self.completed)


def _run(ops: list[PhysicalOp], limits: ExecutionLimits, callbacks: list,
         cancelled: threading.Event) -> Iterator[RefBundle]:
    last = ops[-1]
    reported: list = [None] * len(ops)
    while not cancelled.is_set():
        _move_downstream(ops)
        _stop_upstream_of_finished(ops)
        _dispatch(ops, limits)
        if callbacks:  # a barrier (sort, shuffle) finishes inside its dispatch
            _report_progress(ops, callbacks, reported)
        if last.outputs:
            bundle = last.outputs.popleft()
            yield bundle
            del bundle  # hold no reference to a block the consumer has been handed
            continue
        if last.done():
            return
        pending = [ref for op in ops for ref in op.pending_refs()]
        if not pending:
            if any(op.wants_to_dispatch() for op in ops) or _move_downstream(ops):
                continue
            raise RuntimeError(
                "ray.data executor stalled: no task in flight and none can start "
                f"(operators: {[(op.name, op.done()) for op in ops]})"
            )
        ready, _ = ray.wait(pending, num_returns=1, timeout=_CANCEL_POLL_S)
        if not ready:
            continue
        rest = [ref for ref in pending if ref not in set(ready)]
        if rest:
            more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
            ready = [*ready, *more]
        ready_set = set(ready)
        for op in ops:
            op.on_ready(ready_set)
        if callbacks:
            _report_progress(ops, callbacks, reported)


def _report_progress(ops: list[PhysicalOp], callbacks: list, reported: list) -> None:
    """Tell the callbacks about each operator whose finished blocks (or end) changed."""
    for index, op in enumerate(ops):
        now = (len(op.stats.output_metadata), op.done())
        if reported[index] != now:
            reported[index] = now
            progress = op.progress()
            for callback in callbacks:
                callback.on_operator_progress(progress)


def _move_downstream(ops: list[PhysicalOp]) -> bool:
    """Hand finished blocks to the next operator; True if anything moved or closed."""
    moved = False
    for upstream, downstream in zip(ops, ops[1:]):
        while upstream.outputs:
            downstream.add_input(upstream.outputs.popleft(), counted=upstream.makes_new_blocks)
            moved = True
        if upstream.done() and not upstream.outputs and not downstream.inputs_closed:
            downstream.close_inputs()
            moved = True
    return moved


def _stop_upstream_of_finished(ops: list[PhysicalOp]) -> None:
    """Once an operator will produce nothing more (a limit reached), the operators
    before it are stopped: their queued work and results are dropped."""
    for index in range(len(ops) - 1, 0, -1):
        if ops[index].done():
            for op in ops[:index]:
                if not op.done():
                    op.shutdown()
                    op._mark_finished()
            return


def _dispatch(ops: list[PhysicalOp], limits: ExecutionLimits) -> None:
    """Start tasks downstream first (finishing work frees memory), while the blocks
    held plus the expected outputs in flight fit the object-store budget."""
    held = sum(op.held_bytes() + op.in_flight_bytes() for op in ops)
    for op in reversed(ops):
        while op.wants_to_dispatch():
            expected = op.next_output_bytes()
            busy = any(o.active_tasks() for o in ops)  # else: start one, whatever the budget
            if busy and held + expected > limits.object_store_bytes:
                return
            op.dispatch_one()
            held += expected
            if isinstance(op, (AllToAllOp, UnionOp)):
                break


def execute(op: _plan.LogicalOperator, *, parent_stats: DatasetStats | None = None) -> Execution:
    return Execution(op, parent_stats=parent_stats)

