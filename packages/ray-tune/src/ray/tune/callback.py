"""`tune.Callback` (Ray 2.x): hooks the driver loop calls as trials start, report and end.

    class Printer(tune.Callback):
        def on_trial_result(self, iteration, trials, trial, result, **info):
            print(trial, result["score"])
    tune.Tuner(f, run_config=tune.RunConfig(callbacks=[Printer()]))   # or tune.run(callbacks=...)

`iteration` counts driver-loop events; `trials` is every trial of the run. A callback
that raises stops the run (as in Ray). Hooks run in the driver, so keep them quick.
"""

from __future__ import annotations

from typing import Any


class Callback:
    """Override any of these; each receives keyword `**info` for forward compatibility."""

    def setup(self, **info: Any) -> None:
        pass

    def on_trial_start(self, iteration: int, trials: list, trial, **info: Any) -> None:
        pass

    def on_trial_result(self, iteration: int, trials: list, trial, result: dict, **info: Any) -> None:
        pass

    def on_checkpoint(self, iteration: int, trials: list, trial, checkpoint, **info: Any) -> None:
        pass

    def on_trial_complete(self, iteration: int, trials: list, trial, **info: Any) -> None:
        pass

    def on_trial_error(self, iteration: int, trials: list, trial, **info: Any) -> None:
        pass

    def on_experiment_end(self, trials: list, **info: Any) -> None:
        pass


class CallbackList:
    """Calls one hook on every callback, with the loop's iteration count and trial list."""

    def __init__(self, callbacks: list | None, trials_fn):
        callbacks = list(callbacks or [])
        for cb in callbacks:
            if not isinstance(cb, Callback):
                raise TypeError(
                    f"callbacks must be tune.Callback instances, got {type(cb).__name__}; "
                    "subclass ray.tune.Callback"
                )
        self._callbacks = callbacks
        self._trials = trials_fn
        self.iteration = 0

    def __bool__(self) -> bool:
        return bool(self._callbacks)

    def call(self, hook: str, **kwargs: Any) -> None:
        if not self._callbacks:
            return
        self.iteration += 1
        trials = list(self._trials())
        for cb in self._callbacks:
            if hook == "setup":
                cb.setup(**kwargs)
            elif hook == "on_experiment_end":
                cb.on_experiment_end(trials=trials, **kwargs)
            else:
                getattr(cb, hook)(iteration=self.iteration, trials=trials, **kwargs)
