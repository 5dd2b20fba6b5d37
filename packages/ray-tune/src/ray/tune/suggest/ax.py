"""AxSearch: Ax/BoTorch through an `AxClient` (`pip install ax-platform`)."""

from __future__ import annotations

from ray.tune.suggest._optional import require
from ray.tune.suggest.suggestion import SuggestionAlgorithm


class AxSearch(SuggestionAlgorithm):
    """Asks `ax_client.get_next_trial()` and completes trials with the objective's value.

    Create the client with `enforce_sequential_optimization=False` and call
    `ax_client.create_experiment(parameters=..., objective_name=..., minimize=...)`.
    """

    def __init__(self, ax_client, max_concurrent: int | None = 10, mode: str | None = None, **kwargs):
        require("ax", "ax-platform", "AxSearch")
        self._ax = ax_client
        self._objective_name = getattr(ax_client, "objective_name", None)
        self._live_index_mapping: dict[str, int] = {}
        super().__init__(max_concurrent=max_concurrent, **kwargs)

    def _suggest(self, trial_id: str) -> dict:
        parameters, trial_index = self._ax.get_next_trial()
        self._live_index_mapping[trial_id] = trial_index
        return dict(parameters)

    def _on_trial_complete(self, trial_id, result=None, error=False, early_terminated=False):
        index = self._live_index_mapping.pop(trial_id, None)
        if index is None:
            return
        if error or not result or self._objective_name not in result:
            self._ax.log_trial_failure(trial_index=index)
            return
        data = {self._objective_name: (result[self._objective_name], 0.0)}
        config = self._ax.experiment.optimization_config
        for constraint in getattr(config, "outcome_constraints", []) or []:
            for name in _constraint_metric_names(constraint):
                if name in result:
                    data[name] = (result[name], 0.0)
        self._ax.complete_trial(trial_index=index, raw_data=data)


def _constraint_metric_names(constraint) -> list[str]:
    """Ax >= 1.0 lists `metric_names`; older Ax had one `metric` object."""
    if hasattr(constraint, "metric_names"):
        return list(constraint.metric_names)
    return [constraint.metric.name]
