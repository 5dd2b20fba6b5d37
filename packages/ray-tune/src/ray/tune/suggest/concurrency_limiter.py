"""`ConcurrencyLimiter` (Ray 2.x `ray.tune.search.ConcurrencyLimiter`).

Wraps a searcher so that at most `max_concurrent` of its suggestions run at once:
`suggest` answers None ("not now") while that many are live. With `batch=True` the
searcher is told nothing until the whole batch of live trials has completed; then it
hears every result at once and the next batch starts. A searcher that limits its own
concurrency (`set_max_concurrency` returns True, e.g. TuneBOHB, which does not count
paused trials) is handed the limit and left to apply it.
"""

from __future__ import annotations

from ray.tune.error import TuneError
from ray.tune.suggest.suggestion import SuggestionAlgorithm


class ConcurrencyLimiter(SuggestionAlgorithm):
    """See the module docstring. `searcher` is any SuggestionAlgorithm (or 2.x `Searcher`)."""

    def __init__(self, searcher: SuggestionAlgorithm, max_concurrent: int, batch: bool = False):
        if isinstance(max_concurrent, bool) or not isinstance(max_concurrent, int) or max_concurrent < 1:
            raise TuneError(
                f"ConcurrencyLimiter(max_concurrent={max_concurrent!r}): must be an int >= 1"
            )
        if not isinstance(searcher, SuggestionAlgorithm):
            raise TuneError(
                f"ConcurrencyLimiter only wraps searchers (ray.tune.search.Searcher), got "
                f"{type(searcher).__name__}; to limit a BasicVariantGenerator pass "
                "TuneConfig(max_concurrent_trials=...) / tune.run(max_concurrent_trials=...)"
            )
        super().__init__(max_concurrent=None)
        self.searcher = searcher
        self.max_concurrent = max_concurrent
        self.batch = batch
        self.live_trials: set[str] = set()
        self._batch_results: dict[str, tuple[dict | None, bool]] = {}
        self._limit_concurrency = not searcher.set_max_concurrency(max_concurrent)

    @property
    def metric(self):
        return getattr(self.searcher, "_metric", None)

    @property
    def mode(self):
        return getattr(self.searcher, "_mode", None)

    def set_max_concurrency(self, max_concurrent: int) -> bool:
        self.max_concurrent = max_concurrent
        self._limit_concurrency = not self.searcher.set_max_concurrency(max_concurrent)
        return True

    def set_search_properties(self, metric, mode, config=None, **spec) -> bool:
        inner = getattr(self.searcher, "set_search_properties", None)
        return bool(inner(metric, mode, config=config, **spec)) if inner is not None else False

    def _suggest(self, trial_id: str) -> dict | None:
        if not self._limit_concurrency:
            return self.searcher._gated_suggest(trial_id)
        if len(self.live_trials) >= self.max_concurrent:
            return None
        suggested = self.searcher._gated_suggest(trial_id)
        if suggested is not None:
            self.live_trials.add(trial_id)
        return suggested

    def is_finished(self) -> bool:
        return super().is_finished() or self.searcher.is_finished()

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        self.searcher.on_trial_result(trial_id, result)

    def on_trial_complete(self, trial_id, result=None, error=False, early_terminated=False):
        self._live_trial_ids.discard(trial_id)
        if not self._limit_concurrency:
            self.searcher.on_trial_complete(trial_id, result=result, error=error)
            return
        if trial_id not in self.live_trials:
            return
        if not self.batch:
            self.live_trials.discard(trial_id)
            self.searcher.on_trial_complete(trial_id, result=result, error=error)
            return
        self._batch_results[trial_id] = (result, error)
        if len(self._batch_results) < len(self.live_trials):
            return  # the batch is still running: the searcher waits for all of it
        batch, self._batch_results = self._batch_results, {}
        for done_id, (done_result, done_error) in batch.items():
            self.live_trials.discard(done_id)
            self.searcher.on_trial_complete(done_id, result=done_result, error=done_error)

    def on_pause(self, trial_id: str) -> None:
        self.searcher.on_pause(trial_id)

    def on_unpause(self, trial_id: str) -> None:
        self.searcher.on_unpause(trial_id)

    def save_state(self):
        state = super().save_state()
        state["searcher"] = self.searcher.save_state()
        return state

    def restore_state(self, state) -> None:
        state = dict(state)
        searcher_state = state.pop("searcher")
        super().restore_state(state)  # keeps live_trials: resumed trials report as they finish
        self.searcher.restore_state(searcher_state)
