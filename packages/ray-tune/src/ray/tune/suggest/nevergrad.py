"""NevergradSearch: any Nevergrad ask/tell optimizer (`pip install nevergrad`)."""

from __future__ import annotations

from ray.tune.suggest._optional import require, to_builtin
from ray.tune.suggest.search import resolve_metric
from ray.tune.suggest.suggestion import SuggestionAlgorithm


class NevergradSearch(SuggestionAlgorithm):
    """`optimizer` is a Nevergrad optimizer instance.

    With an instrumented optimizer (`ng.p.Instrumentation(lr=...)`) pass
    `parameter_names=None`: the candidate's keyword arguments are the config. With a
    plain vector parametrization, `parameter_names` names its coordinates.
    """

    def __init__(
        self,
        optimizer,
        parameter_names: list[str] | None,
        max_concurrent: int | None = 10,
        reward_attr: str | None = None,
        metric: str | None = "episode_reward_mean",
        mode: str = "max",
        **kwargs,
    ):
        require("nevergrad", "nevergrad", "NevergradSearch")
        self._metric, mode = resolve_metric(metric, mode, reward_attr)
        self._metric_op = 1.0 if mode == "max" else -1.0
        self._nevergrad_opt = optimizer
        self._parameters = list(parameter_names) if parameter_names is not None else None
        self._live_trial_mapping: dict = {}
        super().__init__(max_concurrent=max_concurrent, **kwargs)

    def _suggest(self, trial_id: str) -> dict:
        candidate = self._nevergrad_opt.ask()
        self._live_trial_mapping[trial_id] = candidate
        if self._parameters is None:
            return {k: to_builtin(v) for k, v in candidate.kwargs.items()}
        values = candidate.args[0] if candidate.args else candidate.value
        return {k: to_builtin(v) for k, v in zip(self._parameters, values)}

    def _on_trial_complete(self, trial_id, result=None, error=False, early_terminated=False):
        candidate = self._live_trial_mapping.pop(trial_id, None)
        if candidate is None or error or not result or self._metric not in result:
            return
        # Nevergrad minimises.
        self._nevergrad_opt.tell(candidate, -self._metric_op * result[self._metric])
