"""The function API: run `f(config, reporter)` (or `f(config)` with `tune.report`) as a Trainable.

The function runs in a thread of the trial's actor. Each `reporter(**metrics)` call hands
one result to `train()` and then blocks until that result was taken, so the function runs
at most one report ahead of Tune and can be stopped between reports (the blocked
`reporter` call raises `StopIteration`). A function that returns right after a report
has that report marked `done` (no extra, empty training iteration).

Checkpoints (Ray 2.x): `train.report(metrics, checkpoint=Checkpoint)` copies the
directory into the trial directory as `checkpoint_<iteration>` and adds its name to the
result (`checkpoint_dir_name`). Saving the trainable (pause, PBT, `checkpoint_freq`)
saves the latest such directory; restoring restarts the function, and
`train.get_checkpoint()` returns what was restored (None on a fresh start).
"""

from __future__ import annotations

import inspect
import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from ray.tune import result as R
from ray.tune.checkpoint import Checkpoint, copy_checkpoint_dir
from ray.tune.error import TuneError
from ray.tune.trainable import Trainable

_JOIN_TIMEOUT_S = 2.0
# How long train() waits for the function to finish right after a report.
_LOOKAHEAD_S = 0.005
# The reporter of the function running in this thread (several trials may share a
# process with the in-process executor); the module global is the fallback for threads
# the user's function starts itself.
_thread_state = threading.local()
_current_reporter: StatusReporter | None = None
_current_runner: FunctionRunner | None = None
CHECKPOINT_DIR_NAME = "checkpoint_dir_name"


class _Finished:
    def __init__(self, value: Any = None, error: BaseException | None = None, tb: str = ""):
        self.value = value
        self.error = error
        self.traceback = tb


class StatusReporter:
    """The `reporter` passed to a trainable function: `reporter(mean_accuracy=0.9)`."""

    def __init__(
        self,
        result_queue: queue.Queue,
        continue_semaphore: threading.Semaphore,
        persist_checkpoint: Callable[[Checkpoint, int], str] | None = None,
    ):
        self._queue = result_queue
        self._continue = continue_semaphore
        self._persist_checkpoint = persist_checkpoint
        self._stopped = False
        self._last_result: dict = {}
        self.reports = 0  # calls so far: the n-th report becomes iteration start + n

    def __call__(self, *args: dict, **kwargs: Any) -> None:
        if self._stopped:
            raise StopIteration("the trial was stopped")
        metrics = dict(args[0]) if args else {}
        checkpoint = kwargs.get("checkpoint")
        if isinstance(checkpoint, Checkpoint):
            del kwargs["checkpoint"]
        else:
            checkpoint = None  # a metric that happens to be named "checkpoint"
        metrics.update(kwargs)
        self.reports += 1
        if checkpoint is not None:
            if self._persist_checkpoint is None:
                raise TuneError("this reporter cannot take checkpoints")
            metrics[CHECKPOINT_DIR_NAME] = self._persist_checkpoint(checkpoint, self.reports)
        self._last_result = metrics
        self._queue.put(metrics)
        self._continue.acquire()
        if self._stopped:
            raise StopIteration("the trial was stopped")

    def stop(self) -> None:
        self._stopped = True
        self._continue.release()


class FunctionRunner(Trainable):
    """Trainable that runs `self._function` in a thread; see the module docstring."""

    _function: Callable = staticmethod(lambda config, reporter: None)
    _pass_reporter = True

    def _setup(self, config: dict) -> None:
        self._start_fresh()
        self._latest_checkpoint: str | None = None  # a directory in the trial's logdir
        self._restored_checkpoint: Checkpoint | None = None

    def _start_fresh(self) -> None:
        self._queue: queue.Queue = queue.Queue()
        self._continue = threading.Semaphore(0)
        self._reporter = StatusReporter(self._queue, self._continue, self._persist)
        self._thread: threading.Thread | None = None
        self._finished: _Finished | None = None
        self._pending: dict | _Finished | None = None
        self._last_metrics: dict = {}

    def _persist(self, checkpoint: Checkpoint, report_index: int) -> str:
        """Runs in the function's thread, inside `report`: the copy is done when it returns."""
        # This report's result will carry training_iteration = iteration + its index.
        iteration = self._iteration_at_start + report_index
        name = f"checkpoint_{iteration:06d}"
        target = os.path.join(self._logdir, name)
        copy_checkpoint_dir(checkpoint.path, target)
        # With metadata, Tune can restore the trial from this directory directly
        # (experiment resume, `Tuner.restore`).
        self._write_metadata(target, iteration, saved_as_dict=False)
        return name

    def _run(self) -> None:
        global _current_reporter, _current_runner
        reporter = self._reporter
        _current_reporter = reporter
        _current_runner = self
        _thread_state.reporter = reporter
        _thread_state.runner = self
        try:
            if self._pass_reporter:
                value = type(self)._function(self.config, self._reporter)
            else:
                value = type(self)._function(self.config)
            self._queue.put(_Finished(value=value))
        except StopIteration:
            self._queue.put(_Finished())
        except BaseException as exc:  # noqa: BLE001 - surfaced by train() in the caller
            import traceback

            self._queue.put(_Finished(error=exc, tb=traceback.format_exc()))
        finally:
            # A finished function must not catch later report() calls made outside any
            # trial (the in-process executor runs trials in the driver's process).
            if _current_reporter is reporter:
                _current_reporter = None
            if _current_runner is self:
                _current_runner = None

    def _train(self) -> dict:
        if self._thread is None:
            self._iteration_at_start = self._iteration
            self._thread = threading.Thread(target=self._run, name="tune-function", daemon=True)
            self._thread.start()
        if self._finished is not None:  # ended right after the last result (merged done)
            return {R.DONE: True}
        item, self._pending = (self._pending, None) if self._pending is not None else (
            self._queue.get(), None
        )
        if isinstance(item, _Finished):
            return self._final_result(item)
        self._last_metrics = item
        if CHECKPOINT_DIR_NAME in item:
            # What Tune has seen (the function may already have made its next one).
            self._latest_checkpoint = os.path.join(self._logdir, item[CHECKPOINT_DIR_NAME])
        # Let the function run ahead to its next report. If it returns at once (the
        # common case for short objectives), this result is the last one: mark it done
        # now instead of spending another training call on an empty final result.
        self._continue.release()
        try:
            following = self._queue.get(timeout=_LOOKAHEAD_S)
        except queue.Empty:
            return item
        if isinstance(following, _Finished) and following.error is None and following.value is None:
            self._finished = following
            return {**item, R.DONE: True}
        self._pending = following
        return item

    def train_batch(self, max_results: int = 64, budget_s: float = 0.02) -> list[dict]:
        """One or more results in one call: those the function has already produced.

        Fast functions report far more often than a round trip to the driver takes;
        batching keeps the driver busy instead of waiting. The function still runs at
        most one report ahead, and a batch spans at most `budget_s` of its time, which
        bounds the work done after a decision to stop.
        """
        deadline = time.monotonic() + budget_s
        results = [self.train()]
        while (
            self._pending is not None
            # An error goes out in the next call: the results before it must reach Tune.
            and not (isinstance(self._pending, _Finished) and self._pending.error is not None)
            # A checkpoint ends a batch, so that a save Tune asks for after this result
            # (pause, PBT) saves this checkpoint, not one the function made later.
            and CHECKPOINT_DIR_NAME not in results[-1]
            and not results[-1].get(R.DONE)
            and len(results) < max_results
            and time.monotonic() < deadline
        ):
            results.append(self.train())
        return results

    def _final_result(self, item: _Finished) -> dict:
        self._finished = item
        if item.error is not None:
            raise TuneError(f"the trainable function raised:\n{item.traceback}") from item.error
        # The repeated last result must not count its per-iteration increments twice.
        # Nor register the last checkpoint a second time.
        per_iter = (R.TIMESTEPS_THIS_ITER, R.EPISODES_THIS_ITER, R.TIME_THIS_ITER_S,
                    CHECKPOINT_DIR_NAME)
        final = {k: v for k, v in self._last_metrics.items() if k not in per_iter}
        if isinstance(item.value, dict):
            final.update(item.value)
        final[R.DONE] = True
        return final

    def _stop_thread(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            self._reporter.stop()
            self._thread.join(timeout=_JOIN_TIMEOUT_S)

    def _stop(self) -> None:
        self._stop_thread()

    def reset_config(self, new_config: dict) -> bool:
        self._stop_thread()
        self.config = new_config
        self._setup(new_config)
        return True

    def _save(self, checkpoint_dir: str):
        """The latest reported checkpoint; a function that reported none restarts from scratch."""
        if self._latest_checkpoint is None:
            return {"function_checkpoint": None}
        copy_checkpoint_dir(self._latest_checkpoint, checkpoint_dir)
        return None

    def _restore(self, checkpoint) -> None:
        self._stop_thread()
        self._start_fresh()
        self._restored_checkpoint = None
        self._latest_checkpoint = None
        if isinstance(checkpoint, str):
            # Keep a copy of our own: a checkpoint from another process (PBT, pausing)
            # arrives in a temporary directory that is deleted after this call.
            target = os.path.join(self._logdir, f"checkpoint_{self._iteration:06d}")
            copy_checkpoint_dir(checkpoint, target)
            self._latest_checkpoint = target
            self._restored_checkpoint = Checkpoint(target)


def wrap_function(train_func: Callable) -> type[FunctionRunner]:
    """Builds a FunctionRunner subclass for `train_func(config[, reporter])`."""
    try:
        params = [
            p
            for p in inspect.signature(train_func).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        pass_reporter = len(params) >= 2
    except (TypeError, ValueError):
        pass_reporter = True
    name = getattr(train_func, "__name__", "func")
    return type(
        name,
        (FunctionRunner,),
        {
            "_function": staticmethod(train_func),
            "_pass_reporter": pass_reporter,
            "__module__": getattr(train_func, "__module__", __name__),
            "__qualname__": name,
        },
    )


def report(*args: dict, **metrics: Any) -> None:
    """Reports metrics from inside a function trainable.

    Both spellings: `tune.report(loss=0.1)` (0.7) and `train.report({"loss": 0.1},
    checkpoint=Checkpoint.from_directory(d))` (Ray 2.x).
    """
    reporter = getattr(_thread_state, "reporter", None) or _current_reporter
    if reporter is None:
        raise TuneError(
            "tune.report()/train.report()/tune.track.log() was called outside a Tune trial; "
            "call it from a function passed to tune.run() or tune.Tuner()"
        )
    reporter(*args, **metrics)


def current_runner() -> FunctionRunner | None:
    """The FunctionRunner whose function runs in this thread (None outside a trial)."""
    return getattr(_thread_state, "runner", None) or _current_runner


def current_reporter() -> StatusReporter | None:
    """The reporter of the function running in this thread (None outside a trial)."""
    return getattr(_thread_state, "reporter", None) or _current_reporter
