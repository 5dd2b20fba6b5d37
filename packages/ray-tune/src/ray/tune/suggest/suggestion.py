"""SuggestionAlgorithm: base class for model-based searchers that propose one config at a time.

Subclasses implement `_suggest(trial_id) -> dict | None` (None: nothing to suggest now)
and `on_trial_complete`. The concurrency limit is written once, here: `_suggest` is not
called while `max_concurrent` suggested trials are still live. `ConcurrencyLimiter` and
`Repeater` (their own modules) wrap any SuggestionAlgorithm; what every such wrapper passes
through to the searcher inside it is written once, in `SearcherWrapper`.
"""

from __future__ import annotations

import copy
import itertools
import uuid
from collections.abc import Iterator

from ray.tune.error import TuneError
from ray.tune.experiment import convert_to_experiment_list
from ray.tune.suggest.search import SearchAlgorithm, create_trial_from_spec
from ray.tune.suggest.variant_generator import format_vars
from ray.tune.trial import Trial


class SuggestionAlgorithm(SearchAlgorithm):
    """See the module docstring. `max_concurrent=None` means no limit."""

    def __init__(self, max_concurrent: int | None = None):
        if max_concurrent is not None and max_concurrent < 1:
            raise TuneError(f"max_concurrent must be >= 1, got {max_concurrent}")
        self._max_concurrent = max_concurrent
        self._live_trial_ids: set[str] = set()
        self._trial_generator: Iterator[Trial | None] = iter(())
        self._counter = 0
        self._finished = False

    def add_configurations(self, experiments) -> None:
        for experiment in convert_to_experiment_list(experiments):
            self._trial_generator = itertools.chain(
                self._trial_generator, self._generate_trials(experiment.spec, experiment.name)
            )

    def next_trials(self) -> list[Trial]:
        trials = []
        for trial in self._trial_generator:
            if trial is None:
                return trials
            trials.append(trial)
        self._finished = True
        return trials

    def is_finished(self) -> bool:
        return self._finished

    def _generate_trials(self, experiment_spec: dict, experiment_name: str) -> Iterator[Trial | None]:
        for _ in range(experiment_spec.get("num_samples", 1)):
            trial_id = uuid.uuid4().hex[:8]
            while True:
                suggested = self._gated_suggest(trial_id)
                if suggested is not None:
                    break
                yield None
            spec = copy.deepcopy(experiment_spec)
            spec["config"] = _merge_dicts(spec.get("config", {}), suggested)
            self._counter += 1
            tag = f"{self._counter}_{format_vars(_flatten(suggested))}"
            yield create_trial_from_spec(
                spec, experiment_name, experiment_tag=tag, trial_id=trial_id,
                evaluated_params=_flatten_str(suggested),
            )

    def _gated_suggest(self, trial_id: str) -> dict | None:
        if self._max_concurrent is not None and len(self._live_trial_ids) >= self._max_concurrent:
            return None
        suggested = self._suggest(trial_id)
        if suggested is not None:
            self._live_trial_ids.add(trial_id)
        return suggested

    def on_trial_complete(self, trial_id, result=None, error=False, early_terminated=False):
        self._live_trial_ids.discard(trial_id)
        self._on_trial_complete(trial_id, result=result, error=error, early_terminated=early_terminated)

    def _on_trial_complete(self, trial_id, result=None, error=False, early_terminated=False):
        """Subclasses override this (or `on_trial_complete`, calling super())."""

    def _suggest(self, trial_id: str) -> dict | None:
        raise NotImplementedError

    def set_max_concurrency(self, max_concurrent: int) -> bool:
        """Ray 2.x: True if this searcher limits its own concurrency (then a
        `ConcurrencyLimiter` around it only passes the limit on); False by default."""
        return False

    def _num_live_trials(self) -> int:
        return len(self._live_trial_ids)

    def save_state(self):
        state = dict(self.__dict__)
        state.pop("_trial_generator", None)  # generators do not pickle; re-added on resume
        return state

    def restore_state(self, state) -> None:
        generator = self._trial_generator
        self.__dict__.update(state)
        self._trial_generator = generator
        self._live_trial_ids = set()


class SearcherWrapper(SuggestionAlgorithm):
    """A searcher around another one (`ConcurrencyLimiter`, `Repeater`).

    A subclass decides when the inner searcher is asked for a suggestion (`_suggest`) and
    what it is told of completions; the rest passes through: `metric` and `mode`, search
    properties, results, pause/unpause, and checkpoints (the inner searcher's state is
    saved through its own `save_state`, under ``"searcher"``)."""

    # said after "got <type>" when something that is not a searcher is wrapped
    _not_a_searcher_hint = ""

    def __init__(self, searcher: SuggestionAlgorithm):
        if not isinstance(searcher, SuggestionAlgorithm):
            raise TuneError(
                f"{type(self).__name__} wraps a searcher (ray.tune.search.Searcher), got "
                f"{type(searcher).__name__}{self._not_a_searcher_hint}"
            )
        super().__init__(max_concurrent=None)
        self.searcher = searcher

    @property
    def metric(self):
        return getattr(self.searcher, "_metric", None)

    @property
    def mode(self):
        return getattr(self.searcher, "_mode", None)

    def set_search_properties(self, metric, mode, config=None, **spec) -> bool:
        inner = getattr(self.searcher, "set_search_properties", None)
        return bool(inner(metric, mode, config=config, **spec)) if inner is not None else False

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        self.searcher.on_trial_result(trial_id, result)

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
        super().restore_state(state)
        self.searcher.restore_state(searcher_state)


def _merge_dicts(base: dict, update: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge_dicts(out[key], value)
        else:
            out[key] = value
    return out


def _flatten(config: dict, prefix: tuple = ()) -> dict:
    out = {}
    for key, value in config.items():
        if isinstance(value, dict):
            out.update(_flatten(value, prefix + (key,)))
        else:
            out[prefix + (key,)] = value
    return out


def _flatten_str(config: dict) -> dict:
    return {"/".join(map(str, k)): v for k, v in _flatten(config).items()}
