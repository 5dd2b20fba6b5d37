"""`tune.Callback` (Ray 2.x): hooks the driver loop calls as the experiment runs.

    class Printer(tune.Callback):
        def on_trial_result(self, iteration, trials, trial, result, **info):
            print(trial, result["score"])
    tune.Tuner(f, run_config=tune.RunConfig(callbacks=[Printer()]))   # or tune.run(callbacks=...)

The hooks, in the order Ray defines them: `setup(stop, num_samples, total_num_samples)`,
`on_step_begin`/`on_step_end` (around every pass of the driver loop), `on_trial_start`
(each time a trial starts running, also after a pause), `on_trial_restore` (a running
trial restored a checkpoint: PBT exploit), `on_trial_save` (a checkpoint was saved),
`on_trial_result`, `on_trial_complete`, `on_trial_recover` (failed, will retry),
`on_trial_error` (failed for good), `on_checkpoint` (a new checkpoint was registered),
`on_experiment_end`. `iteration` is the driver loop's pass number; `trials` is every
trial of the run. `get_state`/`set_state` are saved with the experiment and restored by
`resume`/`Tuner.restore`. A callback that raises stops the run (as in Ray). Hooks run in
the driver, so keep them quick.
"""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger(__name__)


class Callback:
    """Override any of these; each receives keyword `**info` for forward compatibility."""

    def setup(self, stop: Any = None, num_samples: int | None = None,
              total_num_samples: int | None = None, **info: Any) -> None:
        pass

    def on_step_begin(self, iteration: int, trials: list, **info: Any) -> None:
        pass

    def on_step_end(self, iteration: int, trials: list, **info: Any) -> None:
        pass

    def on_trial_start(self, iteration: int, trials: list, trial, **info: Any) -> None:
        pass

    def on_trial_restore(self, iteration: int, trials: list, trial, **info: Any) -> None:
        pass

    def on_trial_save(self, iteration: int, trials: list, trial, **info: Any) -> None:
        pass

    def on_trial_result(self, iteration: int, trials: list, trial, result: dict, **info: Any) -> None:
        pass

    def on_trial_complete(self, iteration: int, trials: list, trial, **info: Any) -> None:
        pass

    def on_trial_recover(self, iteration: int, trials: list, trial, **info: Any) -> None:
        pass

    def on_trial_error(self, iteration: int, trials: list, trial, **info: Any) -> None:
        pass

    def on_checkpoint(self, iteration: int, trials: list, trial, checkpoint, **info: Any) -> None:
        pass

    def on_experiment_end(self, trials: list, **info: Any) -> None:
        pass

    def get_state(self) -> dict | None:
        """State to save with the experiment (None: nothing)."""
        return None

    def set_state(self, state: dict) -> None:
        """Receives what `get_state` returned when the experiment is restored."""


_TRIAL_HOOKS = ("on_trial_start", "on_trial_restore", "on_trial_save", "on_trial_result",
                "on_trial_complete", "on_trial_recover", "on_trial_error", "on_checkpoint")


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
        # Hooks some callback overrides (the others are skipped without building arguments).
        self._used = {
            hook for hook in (*_TRIAL_HOOKS, "on_step_begin", "on_step_end")
            if any(_overrides(cb, hook) for cb in callbacks)
        }

    def __bool__(self) -> bool:
        return bool(self._callbacks)

    def __iter__(self):
        return iter(self._callbacks)

    def uses(self, hook: str) -> bool:
        return hook in self._used

    def step_begin(self) -> None:
        self.iteration += 1
        if "on_step_begin" in self._used:
            self.call("on_step_begin")

    def step_end(self) -> None:
        if "on_step_end" in self._used:
            self.call("on_step_end")

    def call(self, hook: str, **kwargs: Any) -> None:
        if not self._callbacks or (hook in _TRIAL_HOOKS and hook not in self._used):
            return
        if hook == "setup":
            for cb in self._callbacks:
                cb.setup(**kwargs)
            return
        trials = list(self._trials())
        for cb in self._callbacks:
            if hook == "on_experiment_end":
                cb.on_experiment_end(trials=trials, **kwargs)
            else:
                getattr(cb, hook)(iteration=self.iteration, trials=trials, **kwargs)

    def get_state(self) -> dict:
        """{index: state} of the callbacks that have state."""
        states = {}
        for index, cb in enumerate(self._callbacks):
            state = cb.get_state()
            if state is not None:
                states[str(index)] = state
        return states

    def set_state(self, states: dict) -> None:
        for index, cb in enumerate(self._callbacks):
            if str(index) in states:
                cb.set_state(states[str(index)])


def _overrides(cb: Callback, hook: str) -> bool:
    return getattr(type(cb), hook, None) is not getattr(Callback, hook)
