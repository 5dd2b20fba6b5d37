"""`HyperBandForBOHB`: the HyperBand half of BOHB (Falkner et al., 2018), as in Ray.

Two changes to `HyperBandScheduler`, so that the searcher (`TuneBOHB`) can fill the
brackets as it learns:

1. Brackets are filled largest first (most successive halvings first).
2. A trial reaching its milestone is paused even while its bracket is not full yet,
   and the result carries `hyperband_info = {"budget": milestone}`, the budget the
   searcher's model is fitted for. When no trial is running, brackets holding paused
   trials are processed with the trials they have, so a bracket that will never fill
   (fewer samples than its size) still halves and finishes.

Pausing tells the searcher (`on_pause`), so TuneBOHB does not count paused trials
against its concurrency; starting a paused trial again tells it `on_unpause`.
"""

from __future__ import annotations

from ray.tune.schedulers.hyperband import HyperBandScheduler
from ray.tune.schedulers.trial_scheduler import TrialScheduler


class HyperBandForBOHB(HyperBandScheduler):
    """See the module docstring; the arguments are HyperBandScheduler's."""

    def _next_s(self, band: list) -> int:
        return self._s_max_1 - len(band) - 1  # the largest bracket first

    def on_trial_result(self, trial_runner, trial, result):
        result["hyperband_info"] = {}
        bracket, _ = self._trial_info[trial.trial_id]
        bracket.update_trial_stats(trial, result)
        if bracket.continue_trial(trial):
            return TrialScheduler.CONTINUE
        result["hyperband_info"]["budget"] = bracket._cumul_r
        others = [t for t in bracket.current_trials() if t != trial]
        if not bracket.filled() or any(t.status != "PAUSED" for t in others):
            return TrialScheduler.PAUSE
        return self._process_bracket(trial_runner, bracket, trial)

    def choose_trial_to_run(self, trial_runner, allow_recurse: bool = True):
        for band in self._hyperbands:
            for bracket in (b for b in band if b is not None):
                for trial in bracket.current_trials():
                    if trial.status == "PENDING" and trial_runner.has_resources(trial.resources):
                        return trial
        if any(t.status == "RUNNING" for t in trial_runner.get_trials()):
            return None
        # Nothing runs: halve the brackets with paused trials (unfilled ones included).
        processed = False
        for band in self._hyperbands:
            for bracket in (b for b in band if b is not None):
                if any(t.status == "PAUSED" for t in bracket.current_trials()):
                    self._process_bracket(trial_runner, bracket, None)
                    processed = True
        if processed and allow_recurse:
            return self.choose_trial_to_run(trial_runner, allow_recurse=False)
        return None
