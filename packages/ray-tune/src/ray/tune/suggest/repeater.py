"""`Repeater` (Ray 2.x `ray.tune.search.Repeater`): run each suggestion `repeat` times.

The wrapped searcher sees one trial per group of repeats (the first, "primary" one):
when every repeat of a group has completed, it is told the mean of their final
`metric` values (NaN for a repeat that failed or did not report it) as the primary
trial's result. `num_samples` counts all trials, repeats included: with
`num_samples=15, repeat=5` the searcher makes 3 suggestions. With `set_index=True`
each trial's config gets `__trial_index__` (0..repeat-1), e.g. to seed it.
"""

from __future__ import annotations

import copy
import logging
import math

from ray.tune.error import TuneError
from ray.tune.suggest.suggestion import SearcherWrapper, SuggestionAlgorithm

logger = logging.getLogger(__name__)

TRIAL_INDEX = "__trial_index__"


class _TrialGroup:
    """The repeats of one suggestion: trial ids in order, and their scores once done."""

    def __init__(self, primary_trial_id: str, config: dict, size: int):
        self.primary_trial_id = primary_trial_id
        self.config = config
        self.size = size
        self.scores: dict[str, float | None] = {primary_trial_id: None}

    def add(self, trial_id: str) -> int:
        """Adds a repeat; returns its index in the group."""
        self.scores[trial_id] = None
        return len(self.scores) - 1

    def full(self) -> bool:
        return len(self.scores) >= self.size

    def finished(self) -> bool:
        return self.full() and all(score is not None for score in self.scores.values())

    def mean(self) -> float:
        values = [s for s in self.scores.values() if s is not None and not math.isnan(s)]
        return sum(values) / len(values) if values else math.nan


class Repeater(SearcherWrapper):
    """See the module docstring. Avoid early-stopping schedulers with it (repeats of one
    config would be judged on different amounts of training)."""

    def __init__(self, searcher: SuggestionAlgorithm, repeat: int = 1, set_index: bool = True):
        super().__init__(searcher)
        if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
            raise TuneError(f"Repeater(repeat={repeat!r}): must be an int >= 1")
        self.repeat = repeat
        self._set_index = set_index
        self._groups: list[_TrialGroup] = []
        self._group_of: dict[str, _TrialGroup] = {}
        self._current: _TrialGroup | None = None

    def add_configurations(self, experiments) -> None:
        from ray.tune.experiment import convert_to_experiment_list

        for experiment in convert_to_experiment_list(experiments):
            if experiment.spec.get("num_samples", 1) % self.repeat:
                logger.warning(
                    "num_samples=%d is not a multiple of Repeater(repeat=%d): num_samples counts "
                    "every trial, repeats included (num_samples=15, repeat=5: 3 suggestions); the "
                    "last, incomplete group is never reported to the searcher",
                    experiment.spec["num_samples"], self.repeat,
                )
        super().add_configurations(experiments)

    def _suggest(self, trial_id: str) -> dict | None:
        if self._current is None or self._current.full():
            config = self.searcher._gated_suggest(trial_id)
            if config is None:
                return None
            self._current = _TrialGroup(trial_id, copy.deepcopy(config), self.repeat)
            self._groups.append(self._current)
            index = 0
        else:
            index = self._current.add(trial_id)
        self._group_of[trial_id] = self._current
        config = copy.deepcopy(self._current.config)
        if self._set_index:
            config[TRIAL_INDEX] = index
        return config

    def is_finished(self) -> bool:
        group_open = self._current is not None and not self._current.full()
        return super().is_finished() or (self.searcher.is_finished() and not group_open)

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        """Intermediate results are not passed on (as in Ray): the searcher judges a
        group by its averaged final results only."""

    def _on_trial_complete(self, trial_id, result=None, error=False, early_terminated=False):
        group = self._group_of.get(trial_id)
        if group is None:
            return  # not suggested by this Repeater (e.g. added through the client API)
        metric = self.metric
        score = math.nan
        if result and metric in result and not error:
            score = float(result[metric])
        group.scores[trial_id] = score
        if not group.finished():
            return
        mean = group.mean()
        self.searcher.on_trial_complete(
            group.primary_trial_id,
            result=None if math.isnan(mean) else {metric: mean},
            error=math.isnan(mean),  # every repeat failed
        )
