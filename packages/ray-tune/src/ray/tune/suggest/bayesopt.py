"""BayesOptSearch: Gaussian-process optimisation (`pip install bayesian-optimization`).

Works with both bayesian-optimization APIs: 1.x (`UtilityFunction` passed to
`suggest`) and 2.x/3.x (an acquisition function given to the optimizer).
"""

from __future__ import annotations

from ray.tune.error import TuneError
from ray.tune.suggest._optional import require, to_builtin
from ray.tune.suggest.search import resolve_metric
from ray.tune.suggest.suggestion import SuggestionAlgorithm


class BayesOptSearch(SuggestionAlgorithm):
    """Continuous search over `space = {"x": (low, high), ...}`.

    `utility_kwargs` must set `kind` ("ucb", "ei" or "poi"), `kappa` and `xi`.
    """

    def __init__(
        self,
        space: dict,
        max_concurrent: int | None = 10,
        reward_attr: str | None = None,
        metric: str | None = "episode_reward_mean",
        mode: str = "max",
        utility_kwargs: dict | None = None,
        random_state: int = 1,
        verbose: int = 0,
        **kwargs,
    ):
        byo = require("bayes_opt", "bayesian-optimization", "BayesOptSearch")
        if utility_kwargs is None:
            raise TuneError(
                "BayesOptSearch needs utility_kwargs, e.g. "
                '{"kind": "ucb", "kappa": 2.5, "xi": 0.0}'
            )
        self._metric, mode = resolve_metric(metric, mode, reward_attr)
        self._metric_op = 1.0 if mode == "max" else -1.0
        self._utility = None
        if hasattr(byo, "UtilityFunction"):  # bayesian-optimization 1.x
            self.optimizer = byo.BayesianOptimization(
                f=None, pbounds=space, verbose=verbose, random_state=random_state
            )
            self._utility = byo.UtilityFunction(**utility_kwargs)
        else:
            self.optimizer = byo.BayesianOptimization(
                f=None,
                pbounds=space,
                verbose=verbose,
                random_state=random_state,
                acquisition_function=_acquisition(utility_kwargs),
                allow_duplicate_points=True,
            )
        self._live_trial_mapping: dict[str, dict] = {}
        super().__init__(max_concurrent=max_concurrent, **kwargs)

    def _suggest(self, trial_id: str) -> dict:
        if self._utility is not None:
            params = self.optimizer.suggest(self._utility)
        else:
            params = self.optimizer.suggest()
        params = {k: to_builtin(v) for k, v in params.items()}
        self._live_trial_mapping[trial_id] = params
        return dict(params)

    def _on_trial_complete(self, trial_id, result=None, error=False, early_terminated=False):
        params = self._live_trial_mapping.pop(trial_id, None)
        if params is None or error or not result or self._metric not in result:
            return
        try:
            self.optimizer.register(params=params, target=self._metric_op * result[self._metric])
        except (KeyError, ValueError):
            pass  # the same point twice (concurrent suggestions): one observation is enough


def _acquisition(utility_kwargs: dict):
    from bayes_opt import acquisition

    kind = utility_kwargs.get("kind", "ucb")
    if kind == "ucb":
        return acquisition.UpperConfidenceBound(kappa=utility_kwargs.get("kappa", 2.576))
    if kind == "ei":
        return acquisition.ExpectedImprovement(xi=utility_kwargs.get("xi", 0.0))
    if kind == "poi":
        return acquisition.ProbabilityOfImprovement(xi=utility_kwargs.get("xi", 0.0))
    raise TuneError(f"utility_kwargs kind must be 'ucb', 'ei' or 'poi', got {kind!r}")
