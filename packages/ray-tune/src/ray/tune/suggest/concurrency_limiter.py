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
from ray.tune.suggest.suggestion import SearcherWrapper, SuggestionAlgorithm


class ConcurrencyLimiter(SearcherWrapper):
    """See the module docstring. `searcher` is any SuggestionAlgorithm (or 2.x `Searcher`).

    `live_trials` is checkpointed with the limiter: trials resumed after a restore still
    count against the limit, and report as they finish."""

    _not_a_searcher_hint = (
        "; to limit a BasicVariantGenerator pass "
        "TuneConfig(max_concurrent_trials=...) / tune.run(max_concurrent_trials=...)"
    )

    def __init__(self, searcher: SuggestionAlgorithm, max_concurrent: int, batch: bool = False):
        if isinstance(max_concurrent, bool) or not isinstance(max_concurrent, int) or max_concurrent < 1:
            raise TuneError(
                f"ConcurrencyLimiter(max_concurrent={max_concurrent!r}): must be an int >= 1"
            )
        super().__init__(searcher)
        self.max_concurrent = max_concurrent
        self.batch = batch
        self.live_trials: set[str] = set()
        self._batch_results: dict[str, tuple[dict | None, bool]] = {}
        self._limit_concurrency = not searcher.set_max_concurrency(max_concurrent)

    def set_max_concurrency(self, max_concurrent: int) -> bool:
        self.max_concurrent = max_concurrent
        self._limit_concurrency = not self.searcher.set_max_concurrency(max_concurrent)
        return True

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
