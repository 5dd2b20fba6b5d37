"""Where an execution reports its progress: ``ExecutionCallback``.

The executor calls every callback in ``DataContext.get_current().execution_callbacks``
(a progress bar, a logger, a test) from the thread that runs it (the consuming
thread, or ``iter_batches``' prefetch thread):

* ``on_execution_start(operators)``: the operator names, in pipeline order (fused
  operators are one name, ``ReadRange->MapBatches(f)->Filter(g)``);
* ``on_operator_progress(progress)``: an ``OperatorProgress`` each time an operator
  finishes a block (and once when it is done);
* ``on_execution_end(stats)``: the ``DatasetStats`` of the run (also after an error
  or when the consumer stopped early, with ``completed=False``).

Callbacks must be quick: they run between scheduling steps.

``ProgressBars`` is the callback ray.data adds itself, as Ray does, while
``DataContext.enable_progress_bars`` is on (the default) and bars can draw (``tqdm``
installed, ``RAY_DATA_DISABLE_PROGRESS_BARS`` unset): one bar per operator, counting
its finished blocks, closed when the execution ends.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OperatorProgress:
    """One operator's progress: blocks done of ``total_blocks`` (None: not known yet)."""

    operator_index: int
    name: str
    finished_blocks: int
    total_blocks: int | None
    output_rows: int
    output_bytes: int
    active_tasks: int
    done: bool


class ExecutionCallback:
    """Override the methods you need; each default does nothing."""

    def on_execution_start(self, operators: list[str]) -> None:
        """An execution is starting with these operators (in pipeline order)."""

    def on_operator_progress(self, progress: OperatorProgress) -> None:
        """An operator finished a block, or finished altogether (``progress.done``)."""

    def on_execution_end(self, stats, completed: bool) -> None:
        """The execution ended: ``completed`` is False after an error or an early stop."""


class ProgressBars(ExecutionCallback):
    """One ``ray.experimental.progress_bar.ProgressBar`` per operator of an execution."""

    def __init__(self):
        self._bars: list = []

    def on_execution_start(self, operators: list[str]) -> None:
        from ray.experimental.progress_bar import ProgressBar

        self._bars = [ProgressBar(name, total=None, unit="blocks", position=index)
                      for index, name in enumerate(operators)]

    def on_operator_progress(self, progress: OperatorProgress) -> None:
        bar = self._bars[progress.operator_index]
        total = progress.total_blocks if progress.total_blocks != bar.total else None
        bar.update(progress.finished_blocks - bar.completed, total=total)

    def on_execution_end(self, stats, completed: bool) -> None:
        for bar in self._bars:
            bar.close()

    @property
    def bars(self) -> list:
        """The bars of the current (or last) execution, in pipeline order."""
        return list(self._bars)
