"""BasicVariantGenerator: grid search and random sampling from the config itself."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

from ray.tune.experiment import convert_to_experiment_list
from ray.tune.suggest.search import SearchAlgorithm, create_trial_from_spec
from ray.tune.suggest.variant_generator import (
    flatten_resolved_vars,
    format_vars,
    generate_variants,
)
from ray.tune.trial import Trial


class BasicVariantGenerator(SearchAlgorithm):
    """Generates every grid point `num_samples` times, sampling `sample_from` values."""

    def __init__(self, shuffle: bool = False):
        self._shuffle = shuffle
        self._counter = 0
        self._trial_generator: Iterator[Trial] = iter(())
        self._finished = False

    def add_configurations(self, experiments) -> None:
        for experiment in convert_to_experiment_list(experiments):
            self._trial_generator = itertools.chain(
                self._trial_generator, self._generate_trials(experiment.spec, experiment.name)
            )

    def next_trials(self) -> list[Trial]:
        trials = list(self._trial_generator)
        if self._shuffle:
            random.shuffle(trials)
        self._finished = True
        return trials

    def is_finished(self) -> bool:
        return self._finished

    def _generate_trials(self, unresolved_spec: dict, experiment_name: str) -> Iterator[Trial]:
        for _ in range(unresolved_spec.get("num_samples", 1)):
            for resolved_vars, spec in generate_variants(_variant_part(unresolved_spec)):
                tag = str(self._counter)
                if resolved_vars:
                    tag += "_" + format_vars(resolved_vars)
                self._counter += 1
                yield create_trial_from_spec(
                    {**unresolved_spec, **spec},
                    experiment_name,
                    experiment_tag=tag,
                    evaluated_params=flatten_resolved_vars(resolved_vars),
                )

    def save_state(self):
        return {"counter": self._counter, "finished": self._finished, "shuffle": self._shuffle}

    def restore_state(self, state) -> None:
        self._counter = state["counter"]
        self._finished = state["finished"]
        self._shuffle = state["shuffle"]


def _variant_part(spec: dict) -> dict:
    """Only config and resources take part in variant generation (not stop callables...)."""
    return {"config": spec.get("config", {}), "resources_per_trial": spec.get("resources_per_trial")}
