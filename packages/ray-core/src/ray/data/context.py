"""``ray.data.DataContext``: the settings the executor reads, per driver (or task).

    ctx = ray.data.DataContext.get_current()
    ctx.execution_options.resource_limits.object_store_memory = 200 * 1024**2
    ctx.execution_callbacks.append(MyProgressBar())

Every field here is honoured:

* ``execution_options.resource_limits.object_store_memory``: the most bytes of blocks
  one execution keeps in the store at once (produced but not consumed, plus the
  expected output of tasks in flight). None: half of the cluster's object store.
* ``execution_options.resource_limits.cpu`` / ``.gpu``: the most CPUs (GPUs) the
  tasks of one operator hold at once. None: the cluster's total.
* ``execution_callbacks``: ``ExecutionCallback`` objects told when an execution
  starts, as each operator makes progress, and when it ends (the place for progress
  bars).
* ``enable_progress_bars``: draw a progress bar per operator (on by default, as in
  Ray; also off with ``RAY_DATA_DISABLE_PROGRESS_BARS=1`` or without ``tqdm``).
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field

from ray.data._progress import ExecutionCallback


@dataclass
class ExecutionResources:
    """Limits on what one execution uses; None means the cluster's figure."""

    cpu: float | None = None
    gpu: float | None = None
    object_store_memory: int | None = None

    def __post_init__(self):
        for name in ("cpu", "gpu", "object_store_memory"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, (int, float)) or value <= 0):
                raise ValueError(f"ExecutionResources.{name} must be a positive number or None, got {value!r}")


@dataclass
class ExecutionOptions:
    resource_limits: ExecutionResources = field(default_factory=ExecutionResources)


@dataclass
class DataContext:
    """The ``ray.data`` settings of this process (``DataContext.get_current()``)."""

    execution_options: ExecutionOptions = field(default_factory=ExecutionOptions)
    execution_callbacks: list[ExecutionCallback] = field(default_factory=list)
    enable_progress_bars: bool = True

    _lock = threading.Lock()
    _current = None  # the process's DataContext (a class attribute, not a field)

    @classmethod
    def get_current(cls) -> DataContext:
        with cls._lock:
            if DataContext._current is None:
                DataContext._current = cls()
            return DataContext._current

    @classmethod
    def _set_current(cls, context: DataContext) -> None:
        with cls._lock:
            DataContext._current = context

    def copy(self) -> DataContext:
        return dataclasses.replace(
            self,
            execution_options=ExecutionOptions(dataclasses.replace(self.execution_options.resource_limits)),
            execution_callbacks=list(self.execution_callbacks),
        )

    def __setattr__(self, name, value):
        if name not in {f.name for f in dataclasses.fields(self)}:
            raise AttributeError(
                f"DataContext has no setting {name!r}; the settings are "
                f"{[f.name for f in dataclasses.fields(self)]} (see ray.data.context)"
            )
        if name == "enable_progress_bars" and not isinstance(value, bool):
            raise TypeError(f"DataContext.enable_progress_bars takes True or False, got {value!r}")
        super().__setattr__(name, value)


DatasetContext = DataContext  # Ray 2.0-2.4's name
