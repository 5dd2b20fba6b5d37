"""`Searcher`: the Ray 2.x base class for custom search algorithms.

A thin adapter onto `SuggestionAlgorithm` (which already gates concurrency and turns
suggestions into trials): `suggest(trial_id)` becomes `_suggest`, and `metric`/`mode`
arrive through `set_search_properties` when `TuneConfig` names them.
"""

from __future__ import annotations

from ray.tune.error import TuneError
from ray.tune.suggest.suggestion import SuggestionAlgorithm


class Searcher(SuggestionAlgorithm):
    """Subclass and implement `suggest(trial_id)` and `on_trial_complete(trial_id, result, error)`."""

    FINISHED = "FINISHED"

    def __init__(self, metric: str | None = None, mode: str | None = None):
        if mode not in (None, "max", "min"):
            raise TuneError(f"{type(self).__name__}(mode={mode!r}): mode must be 'max' or 'min'")
        super().__init__(max_concurrent=None)
        self._metric = metric
        self._mode = mode

    @property
    def metric(self) -> str | None:
        return self._metric

    @property
    def mode(self) -> str | None:
        return self._mode

    def set_search_properties(self, metric: str | None, mode: str | None, config=None, **spec) -> bool:
        """Takes TuneConfig's metric/mode unless the searcher was built with its own."""
        if self._metric is None and metric is not None:
            self._metric = metric
        if self._mode is None and mode is not None:
            self._mode = mode
        return True

    def suggest(self, trial_id: str) -> dict | str | None:
        raise NotImplementedError(f"{type(self).__name__} must implement suggest(trial_id)")

    def _suggest(self, trial_id: str) -> dict | None:
        suggested = self.suggest(trial_id)
        if suggested == Searcher.FINISHED:
            self._finished = True
            return None
        return suggested

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        pass

    def on_trial_complete(self, trial_id, result=None, error=False, early_terminated=False):
        self._live_trial_ids.discard(trial_id)
        self._on_trial_complete(trial_id, result=result, error=error)

    def _on_trial_complete(self, trial_id, result=None, error=False, early_terminated=False):
        pass
